// Status: how every runtime call reports success or a user-facing error. Only error paths allocate
// (the message); a successful call never does.
#pragma once

#include <string>
#include <utility>

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

#define DTORCH_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::dtorch::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)

}  // namespace dtorch
