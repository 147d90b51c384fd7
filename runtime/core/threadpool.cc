// ThreadPool: num_threads - 1 persistent worker threads plus the calling thread. parallel_for splits
// [0, n) into size() contiguous chunks (the first n % size() chunks one longer), chunk 0 runs on the
// caller, chunk k on worker k. The split depends only on n and size(). A parallel_for issued from inside
// a worker (nested) runs inline. Nothing is allocated after construction.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/kernel.h"

namespace dtorch {

namespace {
thread_local bool t_in_pool_worker = false;
}  // namespace

struct ThreadPool::Impl {
  int size = 1;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  uint64_t generation = 0;
  int pending = 0;
  bool stop = false;
  // The current job.
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
      void (*f)(void*, int64_t, int64_t);
      void* a;
      int64_t count;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        f = fn;
        a = arg;
        count = n;
      }
      int64_t b, e;
      chunk(count, size, k, &b, &e);
      if (b < e) f(a, b, e);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (--pending == 0) done_cv.notify_one();
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
    impl_->stop = true;
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
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->fn = fn;
    impl_->arg = arg;
    impl_->n = n;
    impl_->pending = impl_->size - 1;
    ++impl_->generation;
  }
  impl_->work_cv.notify_all();
  int64_t b, e;
  Impl::chunk(n, impl_->size, 0, &b, &e);
  if (b < e) fn(arg, b, e);
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->done_cv.wait(lock, [&] { return impl_->pending == 0; });
}

}  // namespace dtorch
