// The .dtm format version this runtime reads and writes, and the runtime's own version (C and C++).
#pragma once

#ifdef __cplusplus
namespace dtorch {
constexpr unsigned kFormatVersion = 1;   // the .dtm format this runtime reads and writes
constexpr const char* kRuntimeVersion = "0.1.0";
}  // namespace dtorch
#endif

#define DTORCH_FORMAT_VERSION 1
#define DTORCH_RUNTIME_VERSION "0.1.0"
