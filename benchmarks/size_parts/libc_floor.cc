// The floor of a static board binary (benchmarks/bench_size.py): what musl costs a program that does what
// dtorch-run needs from the C library (threads with a condition variable, the monotonic clock, malloc and aligned
// allocation, file reads and writes, one integer parse, the CPU count), with no C++ library and no stdio.
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void* worker(void* p) { return p; }

int main(int argc, char** argv) {
  pthread_t t;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  if (pthread_create(&t, nullptr, worker, nullptr) == 0) pthread_join(t, nullptr);
  pthread_mutex_lock(&m);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec = 0;
  pthread_cond_timedwait(&c, &m, &ts);
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  char* p = static_cast<char*>(malloc(static_cast<size_t>(argc) * 100));
  void* q = nullptr;
  if (p == nullptr || posix_memalign(&q, 64, 64) != 0) return 1;
  const int fd = open(argv[0], O_RDONLY);
  char buf[64];
  const ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  memcpy(p, buf, n > 0 ? static_cast<size_t>(n) : 0);
  p[n > 0 ? n : 0] = '\0';
  memset(q, 0, 64);
  if (write(1, p, strlen(p) > 0 ? 1 : 0) < 0) return 1;
  free(p);
  free(q);
  return static_cast<int>(strtol(argc > 1 ? argv[1] : "0", nullptr, 10) + (sysconf(_SC_NPROCESSORS_ONLN) > 0 ? 0 : 1));
}
