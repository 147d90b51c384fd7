// A scoped POSIX mutex lock. The runtime's locks are pthread mutexes, not std::mutex: those are compiled into
// libstdc++ with exceptions (system_error on failure), and on a board build that would be the only reason the C++
// unwinder and its tables were linked into a dtorch-run built with -fno-exceptions.
#pragma once

#include <pthread.h>

namespace dtorch {

struct AdoptLock {};
constexpr AdoptLock kAdopt{};  // Lock(mu, kAdopt): take over a mutex the caller has already locked

class Lock {
 public:
  explicit Lock(pthread_mutex_t* mu) : mu_(mu) { pthread_mutex_lock(mu_); }
  Lock(pthread_mutex_t* mu, AdoptLock) : mu_(mu) {}
  ~Lock() { pthread_mutex_unlock(mu_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  pthread_mutex_t* mu_;
};

}  // namespace dtorch
