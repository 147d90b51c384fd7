// Names of status codes, for messages and the Python binding; printf-style error messages.
#include "dtorch/status.h"

#include <cstdarg>

namespace dtorch {

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

std::string vformat_str(const char* fmt, va_list ap) {
  char buf[256];
  va_list again;
  va_copy(again, ap);
  const int n = vformat(buf, sizeof(buf), fmt, ap);
  std::string out;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out.assign(buf, static_cast<size_t>(n));
  } else {
    out.resize(static_cast<size_t>(n));
    vformat(&out[0], static_cast<size_t>(n) + 1, fmt, again);
  }
  va_end(again);
  return out;
}

std::string format_str(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string out = vformat_str(fmt, ap);
  va_end(ap);
  return out;
}

Status error_status(StatusCode code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat_str(fmt, ap);
  va_end(ap);
  return Status(code, std::move(msg));
}

}  // namespace dtorch
