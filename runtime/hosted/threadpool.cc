// ThreadPool: num_threads - 1 persistent worker threads plus the calling thread.
//
// parallel_for(n) splits [0, n) into min(n, 4 * size()) contiguous parts (the first n % parts one longer: the split
// depends only on n and size()), and the parts into size() contiguous shares, one per thread (the caller's first).
// Each thread claims the parts of its own share first, then those left in the others' shares, until none are left:
// when consecutive kernels split their work the same way (by blocks of positions or rows: kernels/common/util.h
// position_blocks and PlaneRows), a thread mostly reads what it wrote itself, in its own core's cache, rather than
// what another core wrote. The caller works too and never waits for a worker that has not started: if another
// process holds a core and a worker is not scheduled, the caller runs that worker's parts itself. It waits only for
// parts a worker is running. Kernels make results independent of the split (each index is processed exactly once,
// never reduced across parts), so the bits do not depend on the thread count or on who ran what. A parallel_for
// issued from inside a worker (nested) runs inline. Nothing is allocated after construction.
//
// The threads, lock and condition variables are POSIX threads, not std::thread / std::mutex (hosted/lock.h says
// why). A worker that cannot be created leaves the pool smaller (size() reports it); its parts are run by the others.
//
// Callers: the pool runs one parallel_for at a time. A Session's Runs on several threads share its pool, so a
// parallel_for that finds the pool serving another caller runs all of its parts on its own thread instead of
// waiting (the same bits: results never depend on the split); the pool goes to whichever caller asks when it is
// free.
//
// Hand-off: a model run issues one parallel_for per big kernel, microseconds apart, so an idle worker spins for a
// short while (a few thousand pause instructions, then a few yields) watching for the next job before it sleeps on
// the condition variable; the caller waits for running parts the same way. Waking a sleeping thread costs tens of
// microseconds, as much as a small kernel's whole work.
//
// Jobs live in two slots used alternately. A worker that saw generation g enters slot g % 2 (users + 1), then
// checks that the slot still holds g; the caller, before reusing a slot, marks it empty and waits until no worker
// is inside it (sequentially consistent operations on both sides, so one of them always sees the other).
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "core/kernel.h"
#include "hosted/lock.h"

namespace dtorch {

namespace {
thread_local bool t_in_pool_worker = false;

constexpr int kSpinIterations = 2000;  // pause instructions before yielding
constexpr int kYieldIterations = 16;   // then sched_yield calls before sleeping
constexpr int kPartsPerThread = 4;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

// Spins (then yields) until done() is true or the budget is spent; returns done().
template <typename F>
bool spin_until(F&& done) {
  for (int spin = 0; spin < kSpinIterations + kYieldIterations; ++spin) {
    if (done()) return true;
    if (spin < kSpinIterations)
      cpu_relax();
    else
      sched_yield();
  }
  return done();
}

constexpr int kMaxThreads = 1024;  // SessionOptions::num_threads's range

struct alignas(64) Counter {  // a line of its own: threads claiming from different shares do not share a line
  std::atomic<int> v{0};
};

struct Job {
  alignas(64) std::atomic<uint64_t> gen{0};  // the generation this slot holds (0: being written)
  void (*fn)(void*, int64_t, int64_t) = nullptr;
  void* arg = nullptr;
  int64_t n = 0;
  int parts = 0;
  Counter done;                // parts finished (each thread adds its count once it finds none left)
  Counter users;               // workers inside this slot
  std::unique_ptr<Counter[]> next;  // per share (the pool's size of them): the next of its parts to claim
};

// Worker k (1-based) runs on the k-th CPU the process may use after the CPU the pool was created on (Linux; when
// the pool is no larger than that set). Left unpinned, the scheduler often puts a worker on its waker's CPU
// (wake-affine) and the two share one core for tens of milliseconds, so the first runs of a new session got no
// speed-up from its threads. The caller's thread is never pinned.
void pin_worker(int k, int caller_cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  const int n = CPU_COUNT(&allowed);
  if (k >= n) return;  // more threads than CPUs: leave placement to the scheduler
  int order[CPU_SETSIZE];
  int m = 0;
  for (int pass = 0; pass < 2; ++pass)  // the CPUs after the caller's, then those before it (and its own last)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &allowed) && ((pass == 0) == (cpu > caller_cpu))) order[m++] = cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(order[(k - 1) % m], &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);  // best effort: a failure leaves it unpinned
#else
  (void)k;
  (void)caller_cpu;
#endif
}

void chunk(int64_t n, int parts, int k, int64_t* begin, int64_t* end) {
  const int64_t base = n / parts, rem = n % parts;
  *begin = k * base + std::min<int64_t>(k, rem);
  *end = *begin + base + (k < rem ? 1 : 0);
}

// The first part of share s of `parts` parts among `shares` threads.
int share_begin(int parts, int shares, int s) { return static_cast<int>(int64_t{s} * parts / shares); }
}  // namespace

struct ThreadPool::Impl {
  int size = 1;                        // the caller + the workers started (workers[0 .. size - 2])
  pthread_t workers[kMaxThreads - 1];
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
  pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
  int caller_cpu = -1;
  int next_worker = 1;  // the index the next starting worker takes (under mu)
  std::atomic<uint64_t> generation{0};  // the latest published job (0: none yet)
  std::atomic<bool> stop{false};
  pthread_mutex_t caller_mu = PTHREAD_MUTEX_INITIALIZER;  // held by the caller whose job the pool is running
  Job slots[2];

  // Thread `self` (0: the caller) claims and runs parts of `j`, its own share's first, then the others', until none
  // are left; then adds how many it ran to `done` and wakes the caller when that completes the job.
  void run_parts(Job& j, int self) {
    const int parts = j.parts, shares = size;  // a share per thread
    int ran = 0;
    for (int d = 0; d < shares; ++d) {
      const int sh = (self + d) % shares;
      const int first = share_begin(parts, shares, sh), len = share_begin(parts, shares, sh + 1) - first;
      for (;;) {
        const int i = j.next[sh].v.fetch_add(1, std::memory_order_relaxed);
        if (i >= len) break;
        int64_t b, e;
        chunk(j.n, parts, first + i, &b, &e);
        if (b < e) j.fn(j.arg, b, e);
        ++ran;
      }
    }
    if (ran > 0 && j.done.v.fetch_add(ran, std::memory_order_acq_rel) + ran == parts) {
      Lock lock(&mu);  // the caller checks `done` under the lock before it sleeps
      pthread_cond_signal(&done_cv);
    }
  }

  void worker_loop(int k, int caller_cpu) {
    t_in_pool_worker = true;
    pin_worker(k, caller_cpu);
    uint64_t seen = 0;
    for (;;) {
      if (!spin_until([&] {
            return generation.load(std::memory_order_acquire) != seen || stop.load(std::memory_order_relaxed);
          })) {
        Lock lock(&mu);
        while (!stop.load(std::memory_order_relaxed) && generation.load(std::memory_order_acquire) == seen)
          pthread_cond_wait(&work_cv, &mu);
      }
      if (stop.load(std::memory_order_relaxed)) return;
      const uint64_t g = generation.load(std::memory_order_acquire);
      seen = g;
      Job& j = slots[g & 1];
      j.users.v.fetch_add(1, std::memory_order_seq_cst);
      if (j.gen.load(std::memory_order_seq_cst) == g) run_parts(j, k);  // else: the slot moved on to a later job
      j.users.v.fetch_sub(1, std::memory_order_release);
    }
  }

  static void* worker_main(void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    int k;
    {
      Lock lock(&self->mu);
      k = self->next_worker++;
    }
    self->worker_loop(k, self->caller_cpu);
    return nullptr;
  }
};

ThreadPool::ThreadPool() : impl_(nullptr) {}

ThreadPool::ThreadPool(int num_threads) : impl_(new Impl) {
  const int want = std::min(std::max(1, num_threads), kMaxThreads);
#if defined(__linux__)
  impl_->caller_cpu = sched_getcpu();
#endif
  for (Job& j : impl_->slots) j.next.reset(new Counter[want]);
  while (impl_->size < want && pthread_create(&impl_->workers[impl_->size - 1], nullptr, &Impl::worker_main,
                                              impl_) == 0)
    ++impl_->size;
}

ThreadPool::~ThreadPool() {
  if (impl_ == nullptr) return;
  {
    Lock lock(&impl_->mu);
    impl_->stop.store(true, std::memory_order_relaxed);
  }
  pthread_cond_broadcast(&impl_->work_cv);
  for (int k = 0; k + 1 < impl_->size; ++k) pthread_join(impl_->workers[k], nullptr);
  delete impl_;
}

int ThreadPool::size() const { return impl_ != nullptr ? impl_->size : 1; }

void ThreadPool::parallel_for(int64_t n, void (*fn)(void* arg, int64_t begin, int64_t end), void* arg) {
  if (n <= 0) return;
  if (impl_ == nullptr) {
    fn(arg, 0, n);
    return;
  }
  if (impl_->size == 1 || t_in_pool_worker || pthread_mutex_trylock(&impl_->caller_mu) != 0) {
    fn(arg, 0, n);
    return;
  }
  Impl& s = *impl_;
  Lock held(&s.caller_mu, kAdopt);
  const uint64_t g = s.generation.load(std::memory_order_relaxed) + 1;  // only the caller holding caller_mu writes it
  Job& j = s.slots[g & 1];
  j.gen.store(0, std::memory_order_seq_cst);  // empty: a worker entering now leaves again
  while (j.users.v.load(std::memory_order_seq_cst) != 0) cpu_relax();  // a worker still inside job g - 2
  j.fn = fn;
  j.arg = arg;
  j.n = n;
  j.parts = static_cast<int>(std::min<int64_t>(n, int64_t{kPartsPerThread} * s.size));
  for (int sh = 0; sh < s.size; ++sh) j.next[sh].v.store(0, std::memory_order_relaxed);
  j.done.v.store(0, std::memory_order_relaxed);
  j.gen.store(g, std::memory_order_seq_cst);
  {
    // Under the lock, so a worker between its predicate check and its sleep cannot miss the new generation.
    Lock lock(&s.mu);
    s.generation.store(g, std::memory_order_seq_cst);
  }
  pthread_cond_broadcast(&s.work_cv);
  s.run_parts(j, 0);
  auto finished = [&] { return j.done.v.load(std::memory_order_acquire) == j.parts; };
  if (!spin_until(finished)) {
    Lock lock(&s.mu);
    while (!finished()) pthread_cond_wait(&s.done_cv, &s.mu);
  }
}

}  // namespace dtorch
