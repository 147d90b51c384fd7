// ThreadPool: num_threads - 1 persistent worker threads plus the calling thread. parallel_for splits
// [0, n) into size() contiguous chunks (the first n % size() chunks one longer), chunk 0 runs on the
// caller, chunk k on worker k. The split depends only on n and size(). A parallel_for issued from inside
// a worker (nested) runs inline. Nothing is allocated after construction.
//
// Hand-off: a model run issues one parallel_for per big kernel, microseconds apart, so a worker that has
// finished a chunk spins for a short while (about 50-100 us of pause instructions) watching for the next job
// before it sleeps on the condition variable, and the caller spins the same way waiting for the workers before
// it sleeps. Waking a sleeping thread costs tens of microseconds, as much as a small kernel's whole work.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/kernel.h"

namespace dtorch {

namespace {
thread_local bool t_in_pool_worker = false;

constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}
}  // namespace

struct ThreadPool::Impl {
  int size = 1;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<bool> stop{false};
  // The current job: written by the caller before it publishes a new generation (release), read by workers
  // after they see it (acquire).
  void (*fn)(void*, int64_t, int64_t) = nullptr;
  void* arg = nullptr;
  int64_t n = 0;

  static void chunk(int64_t n, int parts, int k, int64_t* begin, int64_t* end) {
    const int64_t base = n / parts, rem = n % parts;
    *begin = k * base + std::min<int64_t>(k, rem);
    *end = *begin + base + (k < rem ? 1 : 0);
  }

  void worker_loop(int k) {
    t_in_pool_worker = true;
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < kSpinIterations && !stop.load(std::memory_order_relaxed); ++spin) {
        cpu_relax();
        g = generation.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [&] {
          return stop.load(std::memory_order_relaxed) || generation.load(std::memory_order_acquire) != seen;
        });
        g = generation.load(std::memory_order_acquire);
      }
      if (stop.load(std::memory_order_relaxed)) return;
      seen = g;
      int64_t b, e;
      chunk(n, size, k, &b, &e);
      if (b < e) fn(arg, b, e);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu);  // the caller checks `pending` under the lock before it sleeps
        done_cv.notify_one();
      }
    }
  }
};

ThreadPool::ThreadPool(int num_threads) : impl_(new Impl) {
  impl_->size = std::max(1, num_threads);
  impl_->workers.reserve(static_cast<size_t>(impl_->size - 1));
  for (int k = 1; k < impl_->size; ++k) impl_->workers.emplace_back([this, k] { impl_->worker_loop(k); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop.store(true, std::memory_order_relaxed);
  }
  impl_->work_cv.notify_all();
  for (auto& t : impl_->workers) t.join();
  delete impl_;
}

int ThreadPool::size() const { return impl_->size; }

void ThreadPool::parallel_for(int64_t n, void (*fn)(void* arg, int64_t begin, int64_t end), void* arg) {
  if (n <= 0) return;
  if (impl_->size == 1 || t_in_pool_worker) {
    fn(arg, 0, n);
    return;
  }
  impl_->fn = fn;
  impl_->arg = arg;
  impl_->n = n;
  impl_->pending.store(impl_->size - 1, std::memory_order_relaxed);
  {
    // Under the lock, so a worker between its predicate check and its sleep cannot miss the new generation.
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->generation.fetch_add(1, std::memory_order_release);
  }
  impl_->work_cv.notify_all();
  int64_t b, e;
  Impl::chunk(n, impl_->size, 0, &b, &e);
  if (b < e) fn(arg, b, e);
  for (int spin = 0; spin < kSpinIterations && impl_->pending.load(std::memory_order_acquire) != 0; ++spin)
    cpu_relax();
  if (impl_->pending.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->done_cv.wait(lock, [&] { return impl_->pending.load(std::memory_order_acquire) == 0; });
  }
}

}  // namespace dtorch
