// A model's bundled test vector, run and checked: shared by `dtorch-run --self-test` and the agent's SELFTEST, so
// both load it the same way and pass with the same tolerance.
#pragma once

#include <string>
#include <vector>

#include "dtorch/runtime.h"
#include "npy.h"

namespace dtorch {
namespace apps {

struct TestVector {
  std::vector<npy::Array> inputs;  // aligned copies of the bundled inputs (kernels may rely on natural alignment)
  std::vector<TensorView> views;   // one per model input, into `inputs`
  std::vector<std::vector<uint8_t>> expected;
  std::vector<Shape> expected_shapes;
};

// The session's bundled test vector; an error when the model has none.
Status load_test_vector(const Session& session, TestVector* tv);

struct SelfTestResult {
  bool pass = true;
  double max_abs_error = 0.0;
  std::string failure;  // set when an output has the wrong shape: "output 'y' has shape [..], expected [..]"
};

// Compares a Run's outputs with the expected ones: float outputs within 1e-5 x the expected output's largest
// magnitude, other dtypes exactly.
SelfTestResult check_test_vector(const Session& session, const RunResult& result, const TestVector& tv);

}  // namespace apps
}  // namespace dtorch
