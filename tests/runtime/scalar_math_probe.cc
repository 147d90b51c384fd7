// Runs the portable kernels' own transcendental functions (runtime/kernels/common/scalar_math.h) over float32
// inputs: scalar_math_probe IN OUT reads IN (raw float32 values) and writes, to OUT, exp, expm1, log, log1p, tanh,
// erf, sin and cos of every input, one function after the other (raw float32). tests/runtime/test_scalar_math.py
// builds it for the host and for each board architecture and compares the bits.
#include <cstdio>
#include <vector>

#include "kernels/common/scalar_math.h"

namespace sm = dtorch::kernels::smath;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: scalar_math_probe IN OUT\n");
    return 2;
  }
  std::FILE* in = std::fopen(argv[1], "rb");
  if (in == nullptr) {
    std::fprintf(stderr, "cannot open %s\n", argv[1]);
    return 1;
  }
  std::vector<float> x;
  float buf[4096];
  size_t got;
  while ((got = std::fread(buf, sizeof(float), 4096, in)) > 0) x.insert(x.end(), buf, buf + got);
  std::fclose(in);
  float (*const fns[])(float) = {sm::exp, sm::expm1, sm::log, sm::log1p, sm::tanh, sm::erf, sm::sin, sm::cos};
  std::vector<float> y(x.size());
  std::FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  for (auto fn : fns) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = fn(x[i]);
    if (std::fwrite(y.data(), sizeof(float), y.size(), out) != y.size()) {
      std::fprintf(stderr, "short write to %s\n", argv[2]);
      return 1;
    }
  }
  return std::fclose(out) == 0 ? 0 : 1;
}
