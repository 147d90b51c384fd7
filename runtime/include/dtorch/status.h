// Status: how every runtime call reports success or a user-facing error. A Status carries its message in place
// (at most DTORCH_STATUS_MESSAGE_BYTES - 1 characters; a longer one ends in "..."), so neither a successful call
// nor an error allocates: the core runs without a heap (microcontrollers), and the same kernels run everywhere.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <utility>

#include "dtorch/format.h"

#ifndef DTORCH_STATUS_MESSAGE_BYTES
#define DTORCH_STATUS_MESSAGE_BYTES 512  // bare-metal builds pass a smaller one (their stacks are small)
#endif

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
  static constexpr size_t kMessageBytes = DTORCH_STATUS_MESSAGE_BYTES;
  Status() { message_[0] = '\0'; }
  Status(StatusCode code, const char* message);
  // Any string type with c_str() (std::string in hosted code), without this header needing <string>.
  template <typename S, typename = decltype(std::declval<const S&>().c_str())>
  Status(StatusCode code, const S& message) : Status(code, message.c_str()) {}
  Status(const Status& other) : code_(other.code_) { copy_message(other.message_); }
  Status& operator=(const Status& other) {
    if (this != &other) {
      code_ = other.code_;
      copy_message(other.message_);
    }
    return *this;
  }
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const char* message() const { return message_; }

 private:
  friend Status verror_status(StatusCode code, const char* fmt, va_list ap);
  void copy_message(const char* m);
  StatusCode code_ = StatusCode::kOk;
  char message_[kMessageBytes];  // NUL-terminated; only the characters up to the NUL are ever written or read
};

const char* status_code_name(StatusCode c);

// A Status with a printf-style message (dtorch/format.h's subset).
Status error_status(StatusCode code, const char* fmt, ...) DTORCH_PRINTF_LIKE(2, 3);
Status verror_status(StatusCode code, const char* fmt, va_list ap);

#define DTORCH_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::dtorch::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)

}  // namespace dtorch
