// Runs the portable kernels' own transcendental functions (runtime/kernels/common/scalar_math.h) over float32
// inputs: scalar_math_probe IN OUT reads IN (raw float32 values) and writes, to OUT, exp, expm1, log, log1p, tanh,
// erf, sin and cos of every input, one function after the other (raw float32). tests/runtime/test_scalar_math.py
// builds it for the host and for each board architecture and compares the bits. It uses only the C library, so zig
// links it without libc++ (-nostdlib++), which zig would otherwise build once more for the probe's flags.
#include <stdio.h>
#include <stdlib.h>

#include "kernels/common/scalar_math.h"

namespace sm = dtorch::kernels::smath;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: scalar_math_probe IN OUT\n");
    return 2;
  }
  FILE* in = fopen(argv[1], "rb");
  if (in == nullptr) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 1;
  }
  if (fseek(in, 0, SEEK_END) != 0) return 1;
  const long bytes = ftell(in);
  rewind(in);
  const size_t n = bytes > 0 ? static_cast<size_t>(bytes) / sizeof(float) : 0;
  float* x = static_cast<float*>(malloc((n ? n : 1) * sizeof(float)));
  float* y = static_cast<float*>(malloc((n ? n : 1) * sizeof(float)));
  if (x == nullptr || y == nullptr || fread(x, sizeof(float), n, in) != n) return 1;
  fclose(in);
  float (*const fns[])(float) = {sm::exp, sm::expm1, sm::log, sm::log1p, sm::tanh, sm::erf, sm::sin, sm::cos};
  FILE* out = fopen(argv[2], "wb");
  if (out == nullptr) {
    fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  for (auto fn : fns) {
    for (size_t i = 0; i < n; ++i) y[i] = fn(x[i]);
    if (fwrite(y, sizeof(float), n, out) != n) {
      fprintf(stderr, "short write to %s\n", argv[2]);
      return 1;
    }
  }
  free(x);
  free(y);
  return fclose(out) == 0 ? 0 : 1;
}
