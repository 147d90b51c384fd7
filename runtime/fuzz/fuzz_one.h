// One fuzz input through the runtime, shared by the libFuzzer target (fuzz_target.cc) and the standalone
// mutation driver (mutate_main.cc), so both exercise exactly the same code.
//
// fuzz_one() treats the bytes as a .dtm file: first through the C API's heapless engine (dtorch_model_load into the
// arena it asks for, and a run on zero-filled inputs), then Session::CreateFromBuffer, and if that succeeds, one Run
// with zero-filled inputs of the model's declared shapes (dynamic dimensions = 1). The outcome is the Session's. Either step may fail with a
// Status; a crash, an out-of-bounds access or undefined behaviour is a runtime bug that the sanitizers report.
// Ownership: the bytes are only read during the call; nothing is kept after it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dtorch/status.h"

namespace dtorch {
namespace fuzz {

enum class Stage : uint8_t {
  kRejectedAtLoad,   // CreateFromBuffer returned an error
  kRejectedAtRun,    // loaded, but Run returned an error
  kRan,              // loaded and ran
  kInputsTooLarge,   // loaded, but the declared input shapes need more than kMaxInputBytes: not run
};

struct Outcome {
  Stage stage = Stage::kRejectedAtLoad;
  StatusCode code = StatusCode::kOk;   // the error's code for the two rejected stages, kOk otherwise
  std::string message;                 // the error's message
};

// The most bytes of zero-filled input one run may ask for (all inputs together).
constexpr uint64_t kMaxInputBytes = uint64_t{16} << 20;

Outcome fuzz_one(const uint8_t* data, size_t size);

const char* stage_name(Stage s);

}  // namespace fuzz
}  // namespace dtorch
