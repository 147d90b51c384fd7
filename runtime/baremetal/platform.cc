// The platform layer of a bare-metal build (core/platform.h): kernels run on the one core, a fatal error goes to the
// semihosting console and stops the machine. No heap, no threads, no C library I/O.
#include "core/kernel.h"
#include "core/platform.h"
#include "baremetal/semihosting.h"

namespace dtorch {

ThreadPool::ThreadPool() : impl_(nullptr) {}
ThreadPool::ThreadPool(int) : impl_(nullptr) {}
ThreadPool::~ThreadPool() = default;
int ThreadPool::size() const { return 1; }
void ThreadPool::parallel_for(int64_t n, void (*fn)(void* arg, int64_t begin, int64_t end), void* arg) {
  if (n > 0) fn(arg, 0, n);
}

[[noreturn]] void platform_fatal(const char* message) {
  semihosting::write(message);
  semihosting::exit(false);
}

}  // namespace dtorch
