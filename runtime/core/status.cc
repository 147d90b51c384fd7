// Names of status codes, for messages and the Python binding; printf-style error messages, in place.
#include "dtorch/status.h"

#include <cstdarg>

#include "core/carve.h"

namespace dtorch {

Status::Status(StatusCode code, const char* message) : code_(code) { copy_message(message != nullptr ? message : ""); }

void Status::copy_message(const char* m) { copy_cut(message_, kMessageBytes, m); }

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
