// format-test: dtorch::format (runtime/core/format.cc) on the cases tests/runtime/test_format.py sends: one per
// input line, "<format>\t<kind>\t<value>" with kind d (long long), u (unsigned long long), f (double, as a hex
// float so no bits are lost), s (string) or z (size_t); prints each result on its own line between '[' and ']'.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dtorch/format.h"

namespace {
// Not printf-checked: the format comes from the input.
int run(char* out, size_t cap, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = dtorch::vformat(out, cap, fmt, ap);
  va_end(ap);
  return n;
}
}  // namespace

int main() {
  char line[4096];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    line[std::strcspn(line, "\n")] = '\0';
    char* fmt = line;
    char* kind = std::strchr(fmt, '\t');
    if (kind == nullptr) return 2;
    *kind++ = '\0';
    char* value = std::strchr(kind, '\t');
    if (value == nullptr) return 2;
    *value++ = '\0';
    char out[2048];
    switch (kind[0]) {
      case 'd': run(out, sizeof(out), fmt, std::strtoll(value, nullptr, 10)); break;
      case 'u': run(out, sizeof(out), fmt, std::strtoull(value, nullptr, 10)); break;
      case 'z': run(out, sizeof(out), fmt, static_cast<size_t>(std::strtoull(value, nullptr, 10))); break;
      case 'f': run(out, sizeof(out), fmt, std::strtod(value, nullptr)); break;
      case 's': run(out, sizeof(out), fmt, value); break;
      default: return 2;
    }
    std::fputs("[", stdout);
    std::fputs(out, stdout);
    std::fputs("]\n", stdout);
  }
  return 0;
}
