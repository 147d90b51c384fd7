// printf-style formatting without the C library's printf (runtime/core/format.cc says why and what it supports).
// Every message and report the runtime and dtorch-run write goes through these.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>

#if defined(__GNUC__)
#define DTORCH_PRINTF_LIKE(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define DTORCH_PRINTF_LIKE(fmt_index, first_arg)
#endif

namespace dtorch {

// snprintf's contract: writes at most cap - 1 characters and a NUL (when cap > 0), returns the full length.
int vformat(char* buf, size_t cap, const char* fmt, va_list ap);
int format(char* buf, size_t cap, const char* fmt, ...) DTORCH_PRINTF_LIKE(3, 4);
// fprintf's: the characters written, or -1 when the stream fails.
int vprint_to(std::FILE* f, const char* fmt, va_list ap);
int print_to(std::FILE* f, const char* fmt, ...) DTORCH_PRINTF_LIKE(2, 3);

// A short string held in place, for messages without the heap: text() formats into one (cut to fit, ending in
// "..."), c_str() reads it. shape_str (dtorch/types.h) and the loader's and kernels' labels are Texts.
struct Text {
  static constexpr size_t kBytes = 256;
  char buf[kBytes];
  Text() { buf[0] = '\0'; }
  const char* c_str() const { return buf; }
};
Text text(const char* fmt, ...) DTORCH_PRINTF_LIKE(1, 2);
// Appends to t (cut to fit, like text()).
void append(Text* t, const char* fmt, ...) DTORCH_PRINTF_LIKE(2, 3);

}  // namespace dtorch
