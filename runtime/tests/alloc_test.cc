// alloc-test: checks that Session::Run allocates nothing after the first run with a given shape.
// Built by `scons alloc-test` with global operator new/delete replaced by counting versions.
//
//   build/host/alloc-test MODEL.dtm [THREADS]
//
// Every dynamic dimension is set to 2. Prints PASS and exits 0, or prints FAIL and exits 1.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "dtorch/runtime.h"

namespace {
std::atomic<long> g_allocations{0};

void* counted(std::size_t n, std::size_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  void* p = counted(n, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  void* p = counted(n, static_cast<std::size_t>(a));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: alloc-test MODEL.dtm [THREADS] [fast|exact|portable]\n");
    return 2;
  }
  dtorch::SessionOptions options;
  options.num_threads = argc > 2 ? std::atoi(argv[2]) : 1;
  if (argc > 3 && !dtorch::parse_kernel_policy(argv[3], &options.kernels)) {
    std::fprintf(stderr, "alloc-test: error: unknown kernel policy '%s'\n", argv[3]);
    return 2;
  }
  std::unique_ptr<dtorch::Session> session;
  dtorch::Status st = dtorch::Session::Create(argv[1], options, &session);
  if (!st.ok()) {
    std::fprintf(stderr, "alloc-test: error: %s\n", st.message());
    return 1;
  }
  std::vector<std::vector<unsigned char>> storage;
  std::vector<dtorch::TensorView> views;
  for (const dtorch::IOInfo& io : session->inputs()) {
    dtorch::TensorView v;
    v.dtype = io.dtype;
    v.shape.ndim = static_cast<int32_t>(io.dims.size());
    for (size_t d = 0; d < io.dims.size(); ++d) v.shape.dims[d] = io.dims[d] < 0 ? 2 : io.dims[d];
    storage.emplace_back(v.nbytes() + 64, 0);
    views.push_back(v);
  }
  for (size_t i = 0; i < views.size(); ++i) views[i].data = storage[i].data();
  {
    dtorch::RunResult first;
    st = session->Run(views.data(), views.size(), &first);
    if (!st.ok()) {
      std::fprintf(stderr, "alloc-test: error: %s\n", st.message());
      return 1;
    }
  }  // its execution state goes back to the session
  // Three runs reusing one RunResult, then three with a fresh RunResult each (each takes the idle state back).
  const long before = g_allocations.load();
  dtorch::RunResult reused;
  for (int r = 0; r < 6; ++r) {
    dtorch::RunResult fresh;
    st = session->Run(views.data(), views.size(), r < 3 ? &reused : &fresh);
    if (r == 2) reused.reset();
    if (!st.ok()) {
      std::fprintf(stderr, "alloc-test: error: %s\n", st.message());
      return 1;
    }
  }
  const long during = g_allocations.load() - before;
  std::printf("alloc-test %s: %ld allocation(s) in 6 runs after the first (threads %d)\n", during == 0 ? "PASS" : "FAIL",
              during, options.num_threads);
  return during == 0 ? 0 : 1;
}
