// Printing to a stdio stream through dtorch/format.h's formatter, and the fatal-error hook of the hosted builds
// (core/platform.h): both need the C library's stdio, which bare-metal builds leave out.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "core/platform.h"
#include "dtorch/format.h"

namespace dtorch {

int vprint_to(std::FILE* f, const char* fmt, va_list ap) {
  char small[512];
  va_list again;
  va_copy(again, ap);
  const int n = vformat(small, sizeof(small), fmt, ap);
  int rc;
  if (n < static_cast<int>(sizeof(small))) {
    rc = std::fwrite(small, 1, static_cast<size_t>(n), f) == static_cast<size_t>(n) ? n : -1;
  } else {
    char* big = static_cast<char*>(std::malloc(static_cast<size_t>(n) + 1));
    if (big == nullptr) {
      va_end(again);
      return -1;
    }
    vformat(big, static_cast<size_t>(n) + 1, fmt, again);
    rc = std::fwrite(big, 1, static_cast<size_t>(n), f) == static_cast<size_t>(n) ? n : -1;
    std::free(big);
  }
  va_end(again);
  return rc;
}

int print_to(std::FILE* f, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vprint_to(f, fmt, ap);
  va_end(ap);
  return n;
}

[[noreturn]] void platform_fatal(const char* message) {
  std::fputs(message, stderr);
  std::abort();
}

}  // namespace dtorch
