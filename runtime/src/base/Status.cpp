//===- Status.cpp - Error values for the trainc runtime -------------------===//

#include "base/Status.h"

namespace trainc {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::kOk:
    return "ok";
  case StatusCode::kInvalidArgument:
    return "invalid argument";
  case StatusCode::kNotFound:
    return "not found";
  case StatusCode::kOutOfRange:
    return "out of range";
  case StatusCode::kFailedPrecondition:
    return "failed precondition";
  case StatusCode::kDataLoss:
    return "data loss";
  case StatusCode::kUnavailable:
    return "unavailable";
  case StatusCode::kUnimplemented:
    return "unimplemented";
  case StatusCode::kInternal:
    return "internal error";
  }
  return "unknown status code";
}

std::string Status::toString() const {
  if (ok())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace trainc
