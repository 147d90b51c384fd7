// Names of status codes, for messages and the Python binding; printf-style error messages, in place.
#include "dtorch/status.h"

#include <cstdarg>
#include <cstring>

namespace dtorch {

namespace {
// A message cut to fit ends in "...", so a reader sees it was cut.
void mark_cut(char* buf, size_t cap) {
  if (cap >= 4) std::memcpy(buf + cap - 4, "...", 4);
}
}  // namespace

Status::Status(StatusCode code, const char* message) : code_(code) { copy_message(message != nullptr ? message : ""); }

void Status::copy_message(const char* m) {
  const size_t n = std::strlen(m);
  if (n < kMessageBytes) {
    std::memcpy(message_, m, n + 1);
  } else {
    std::memcpy(message_, m, kMessageBytes - 1);
    message_[kMessageBytes - 1] = '\0';
    mark_cut(message_, kMessageBytes);
  }
}

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kVersionMismatch: return "version mismatch";
    case StatusCode::kIOError: return "I/O error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status verror_status(StatusCode code, const char* fmt, va_list ap) {
  Status st;
  st.code_ = code;
  const int n = vformat(st.message_, Status::kMessageBytes, fmt, ap);
  if (n >= static_cast<int>(Status::kMessageBytes)) mark_cut(st.message_, Status::kMessageBytes);
  return st;
}

Status error_status(StatusCode code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Status st = verror_status(code, fmt, ap);
  va_end(ap);
  return st;
}

}  // namespace dtorch
