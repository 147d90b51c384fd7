// The two libsodium symbols that sodium/utils.c refers to from functions the agent never calls (its guarded heap,
// sodium_malloc, which draws canaries from randombytes_buf and reports misuse through sodium_misuse). Compiling
// libsodium's randombytes and core would pull in its CPU dispatch and every primitive's initializer; these stop the
// process instead, so a call that should not happen cannot go unnoticed.
#include <cstddef>
#include <cstdlib>

#include "dtorch/format.h"

extern "C" {

[[noreturn]] void sodium_misuse(void) {
  dtorch::print_to(stderr, "dtorch-agent: fatal: libsodium reported a misuse\n");
  std::abort();
}

void randombytes_buf(void* /*buf*/, std::size_t /*size*/) {
  dtorch::print_to(stderr, "dtorch-agent: fatal: libsodium asked for random bytes, which this build has none of\n");
  std::abort();
}

}  // extern "C"
