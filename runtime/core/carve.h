// Carve: hands out aligned pieces of one caller-given block -- the loader's tables, the C API engine's arena --
// and, past the block's end (or with no block: base == nullptr), only counts, so a caller whose block is too small
// still learns the size it needs. Nothing is allocated; the pieces belong to the block's owner.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/model.h"

namespace dtorch {

struct Carve {
  uint8_t* base;     // the block (aligned to the largest `align` asked for), or nullptr to count only
  size_t cap;        // its bytes
  size_t used = 0;   // bytes laid out so far, padding included (also past cap)
  bool overflow = false;  // a size wrapped around size_t: nothing fits

  // `bytes` at the next multiple of `align` (relative to base); null when it does not fit (or only counting).
  void* take(size_t bytes, size_t align) {
    const size_t at = (used + align - 1) / align * align;
    if (at < used || bytes > SIZE_MAX - at) {
      overflow = true;
      return nullptr;
    }
    used = at + bytes;
    return base != nullptr && used <= cap ? base + at : nullptr;
  }
  template <typename T>
  T* array(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) {
      overflow = true;
      return nullptr;
    }
    return static_cast<T*>(take(n * sizeof(T), 8));
  }
  template <typename T>
  Span<T> span(size_t n) {
    Span<T> s;
    s.ptr = array<T>(n);
    s.n = n;
    return s;
  }
  // Whether everything taken so far lies inside the block.
  bool fits() const { return !overflow && base != nullptr && used <= cap; }
};

// Cut-to-fit text: a message longer than its buffer keeps what fits and ends in "...", so a reader sees it was cut.
inline void mark_cut(char* buf, size_t cap) {
  if (cap >= 4) {
    buf[cap - 4] = '.';
    buf[cap - 3] = '.';
    buf[cap - 2] = '.';
    buf[cap - 1] = '\0';
  }
}

// Copies NUL-terminated `src` into dst[cap], cut to fit.
inline void copy_cut(char* dst, size_t cap, const char* src) {
  size_t n = 0;
  while (src[n] != '\0' && n + 1 < cap) {
    dst[n] = src[n];
    ++n;
  }
  if (cap > 0) dst[n] = '\0';
  if (src[n] != '\0') mark_cut(dst, cap);
}

}  // namespace dtorch
