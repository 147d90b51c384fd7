// The runtime's one clock: POSIX CLOCK_MONOTONIC. (Not std::chrono::steady_clock: libc++ compiles that with
// exceptions, a system_error on failure, and a board build without exceptions would link the C++ unwinder for it.)
#include <time.h>

#include "dtorch/runtime.h"

namespace dtorch {

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace dtorch
