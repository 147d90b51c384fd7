// The libFuzzer entry point for the .dtm loader and executor (build: `scons fuzz=libfuzzer`, needs clang).
//
//   build/fuzz/fuzz-loader CORPUS_DIR [SEED_DIR...] -max_total_time=60 -rss_limit_mb=4096
//   build/fuzz/fuzz-loader runtime/fuzz/crashes/crash-*.dtm          replay reproducers
//
// Seed it with valid .dtm files (tests/runtime/test_fuzz.py writes some with --keep-seeds). Each input is
// loaded with Session::CreateFromBuffer and, if it loads, run once on zero-filled inputs (fuzz_one.h);
// an error Status is the expected answer to a bad file, anything the sanitizers report is a bug.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_one.h"

// A file that asks for a huge arena must get an error Status (the runtime allocates with nothrow new),
// not an allocator abort.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dtorch::fuzz::fuzz_one(data, size);
  return 0;
}
