// Names of status codes, for messages and the Python binding.
#include "dtorch/status.h"

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

}  // namespace dtorch
