// Replacement global operator new/delete that meter the heap (heap_meter.h). Each block carries a 16-byte header
// (plain new: its size; aligned new: its size and the address malloc returned), so delete knows what it frees.
// Out of memory ends the process with one line on stderr (the runtime is built without exceptions).
#include "heap_meter.h"

#include <atomic>
#include <cerrno>  // program_invocation_short_name: dtorch-run or dtorch-agent
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "dtorch/format.h"

namespace {

std::atomic<size_t> g_now{0}, g_peak{0};
constexpr size_t kHeader = 16;  // keeps malloc's 16-byte alignment for plain new

void count_alloc(size_t n) {
  const size_t now = g_now.fetch_add(n, std::memory_order_relaxed) + n;
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

[[noreturn]] void out_of_memory(size_t n) {
  dtorch::print_to(stderr, "%s: error: out of memory allocating %zu bytes\n", program_invocation_short_name, n);
  std::abort();
}

// Out of line (noinline): with LTO every `new` in the runtime would otherwise inline a copy.
__attribute__((noinline)) void* plain_new(size_t n, bool nothrow) {
  auto* raw = static_cast<unsigned char*>(std::malloc(n + kHeader));
  if (raw == nullptr) {
    if (nothrow) return nullptr;
    out_of_memory(n);
  }
  *reinterpret_cast<size_t*>(raw) = n;
  count_alloc(n);
  return raw + kHeader;
}

__attribute__((noinline)) void plain_delete(void* p) {
  if (p == nullptr) return;
  unsigned char* raw = static_cast<unsigned char*>(p) - kHeader;
  g_now.fetch_sub(*reinterpret_cast<size_t*>(raw), std::memory_order_relaxed);
  std::free(raw);
}

// Aligned new (alignment > 16): the block starts `align` bytes into the allocation; the 16 bytes before it hold
// the size and the address to free.
__attribute__((noinline)) void* aligned_new(size_t n, std::align_val_t a, bool nothrow) {
  size_t align = static_cast<size_t>(a);
  if (align < kHeader) align = kHeader;
  void* raw = nullptr;
  if (posix_memalign(&raw, align, n + align) != 0) {
    if (nothrow) return nullptr;
    out_of_memory(n);
  }
  unsigned char* user = static_cast<unsigned char*>(raw) + align;
  reinterpret_cast<size_t*>(user)[-1] = n;
  reinterpret_cast<void**>(user)[-2] = raw;
  count_alloc(n);
  return user;
}

__attribute__((noinline)) void aligned_delete(void* p) {
  if (p == nullptr) return;
  g_now.fetch_sub(static_cast<size_t*>(p)[-1], std::memory_order_relaxed);
  std::free(static_cast<void**>(p)[-2]);
}

}  // namespace

namespace dtorch {
namespace apps {
size_t heap_bytes_peak() { return g_peak.load(std::memory_order_relaxed); }
}  // namespace apps
}  // namespace dtorch

void* operator new(size_t n) { return plain_new(n, false); }
void* operator new[](size_t n) { return plain_new(n, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return plain_new(n, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return plain_new(n, true); }
void* operator new(size_t n, std::align_val_t a) { return aligned_new(n, a, false); }
void* operator new[](size_t n, std::align_val_t a) { return aligned_new(n, a, false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned_new(n, a, true); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned_new(n, a, true); }
void operator delete(void* p) noexcept { plain_delete(p); }
void operator delete[](void* p) noexcept { plain_delete(p); }
void operator delete(void* p, size_t) noexcept { plain_delete(p); }
void operator delete[](void* p, size_t) noexcept { plain_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { plain_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { plain_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { aligned_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { aligned_delete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { aligned_delete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { aligned_delete(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { aligned_delete(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { aligned_delete(p); }
