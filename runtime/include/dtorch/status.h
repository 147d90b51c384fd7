// Status: how every runtime call reports success or a user-facing error. Only error paths allocate
// (the message); a successful call never does.
#pragma once

#include <cstdarg>
#include <string>
#include <utility>

#include "dtorch/format.h"

namespace dtorch {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // a caller's input: wrong name, dtype, shape, missing input
  kInvalidModel,      // a corrupt, truncated or inconsistent .dtm file
  kUnsupported,       // an operator with no kernel in this build, an unknown attribute value
  kVersionMismatch,   // a file too new for this runtime, or a runtime too old for the file
  kIOError,           // a file that cannot be opened or read
  kInternal,          // a bug in the runtime
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

const char* status_code_name(StatusCode c);

// printf-style formatting for error messages (error paths only: it allocates). One out-of-line call per message
// instead of a chain of std::string concatenations keeps the runtime small on boards.
std::string format_str(const char* fmt, ...) DTORCH_PRINTF_LIKE(1, 2);
std::string vformat_str(const char* fmt, va_list ap);
// A Status with a printf-style message.
Status error_status(StatusCode code, const char* fmt, ...) DTORCH_PRINTF_LIKE(2, 3);

#define DTORCH_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::dtorch::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)

}  // namespace dtorch
