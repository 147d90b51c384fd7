// The portable kernels' own transcendental functions (runtime/kernels/common/scalar_math.h) beside the C library's,
// for benchmarks/bench_scalar_math.py:
//   scalar_math_bench values IN OUT   writes, for every float32 of IN, the C library's and then scalar_math.h's
//                                     exp, expm1, log, log1p, tanh, erf, sin, cos (16 arrays of float32)
//   scalar_math_bench time            prints "<function> <libm ns> <scalar_math ns>" per function: the best of 30
//                                     passes over 65,536 values, per value
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/common/scalar_math.h"

namespace sm = dtorch::kernels::smath;

namespace {

using Fn = float (*)(float);
float c_exp(float x) { return std::exp(x); }
float c_expm1(float x) { return std::expm1(x); }
float c_log(float x) { return std::log(x); }
float c_log1p(float x) { return std::log1p(x); }
float c_tanh(float x) { return std::tanh(x); }
float c_erf(float x) { return std::erf(x); }
float c_sin(float x) { return std::sin(x); }
float c_cos(float x) { return std::cos(x); }

constexpr const char* kNames[] = {"exp", "expm1", "log", "log1p", "tanh", "erf", "sin", "cos"};
constexpr Fn kLibm[] = {c_exp, c_expm1, c_log, c_log1p, c_tanh, c_erf, c_sin, c_cos};
constexpr Fn kOwn[] = {sm::exp, sm::expm1, sm::log, sm::log1p, sm::tanh, sm::erf, sm::sin, sm::cos};

// One pass of f over x, through a pointer the compiler cannot see through (both sides are called alike).
__attribute__((noinline)) void pass(Fn f, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

double best_ns(Fn f, const std::vector<float>& x, std::vector<float>& y) {
  double best = 1e30;
  for (int r = 0; r < 30; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pass(f, x.data(), y.data(), x.size());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best * 1e9 / static_cast<double>(x.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "time") == 0) {
    std::vector<float> x(65536), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 4001) - 2000) * 0.004f;
    for (int k = 0; k < 8; ++k) {
      // log and log1p over their domain: |x| (and 1 + |x| - 1 >= -1 anyway)
      std::vector<float> xs = x;
      if (k == 2 || k == 3)
        for (float& v : xs) v = std::fabs(v);
      std::printf("%s %.3f %.3f\n", kNames[k], best_ns(kLibm[k], xs, y), best_ns(kOwn[k], xs, y));
    }
    return 0;
  }
  if (argc != 4 || std::strcmp(argv[1], "values") != 0) {
    std::fprintf(stderr, "usage: scalar_math_bench values IN OUT | scalar_math_bench time\n");
    return 2;
  }
  std::FILE* in = std::fopen(argv[2], "rb");
  if (in == nullptr) return 1;
  std::vector<float> x;
  float buf[4096];
  size_t got;
  while ((got = std::fread(buf, sizeof(float), 4096, in)) > 0) x.insert(x.end(), buf, buf + got);
  std::fclose(in);
  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return 1;
  std::vector<float> y(x.size());
  for (const Fn* set : {kLibm, kOwn}) {
    for (int k = 0; k < 8; ++k) {
      pass(set[k], x.data(), y.data(), x.size());
      if (std::fwrite(y.data(), sizeof(float), y.size(), out) != y.size()) return 1;
    }
  }
  return std::fclose(out) == 0 ? 0 : 1;
}
