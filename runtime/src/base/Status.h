//===- Status.h - Error values for the trainc runtime ----------*- C++ -*-===//
//
// The runtime reports every failure as a Status: a code and a message that
// names the thing the user can find (a file and byte offset, a tensor name,
// a rank). Library code never calls exit() or abort(); tools decide.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_STATUS_H
#define TRAINC_RUNTIME_BASE_STATUS_H

#include <string>
#include <utility>

namespace trainc {

/// Coarse failure classes. Stable: the C API exposes them as integers.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,    ///< The caller passed something malformed.
  kNotFound = 2,           ///< A named file, tensor or device does not exist.
  kOutOfRange = 3,         ///< An index or size is outside its bounds.
  kFailedPrecondition = 4, ///< The call is valid but not in this state.
  kDataLoss = 5,           ///< A file is truncated or corrupt.
  kUnavailable = 6,        ///< A device or peer cannot be reached.
  kUnimplemented = 7,      ///< A feature trainc does not support (yet).
  kInternal = 8,           ///< A trainc bug or an unexpected library error.
};

/// Returns the lower-case name of `code`, e.g. "invalid argument".
const char *statusCodeName(StatusCode code);

/// A success or an error with a message. Cheap to return when ok.
class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// "ok", or "<code name>: <message>".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status okStatus() { return Status(); }
inline Status invalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status notFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status unavailable(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status internalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

} // namespace trainc

/// Returns from the enclosing function when `expr` yields a non-ok Status.
#define TRAINC_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::trainc::Status traincStatus_ = (expr);                                   \
    if (!traincStatus_.ok())                                                   \
      return traincStatus_;                                                    \
  } while (false)

#endif // TRAINC_RUNTIME_BASE_STATUS_H
