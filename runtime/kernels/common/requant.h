// The integer arithmetic of the int8 operators: the requantization multiplier, the rounding, quantize and
// dequantize. dtorch/quant/_fixed_point.py is the same arithmetic in NumPy (the tests' reference); every int8 kernel
// set gives these bits.
//
// A real value r is held as an int8 q with r = scale * (q - zero_point): activations per tensor, asymmetric in
// [-128, 127]; weights per output channel, symmetric (zero point 0) in [-127, 127]; biases int32 at scale
// x_scale * w_scale[o]. A product's int32 accumulator becomes the output's int8 with M = x_scale * w_scale[o] /
// y_scale, held as m in [2^30, 2^31) and e with M ~= m * 2^(e - 31):
//   y = clamp(((acc * m + 2^(s - 1)) >> s) + y_zero_point, lo, hi),   s = 31 - e in [1, 62]
// in 64-bit integers (>> an arithmetic shift: ties round toward +infinity). Only integer operations and, to derive
// m and e, IEEE double multiplications and divisions (correctly rounded everywhere, also in software floating point):
// no C library, no implementation-defined rounding.
#pragma once

#include <stdint.h>
#include <string.h>

#include "kernels/common/isa.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace requant {

constexpr int32_t kQMin = -128, kQMax = 127;

// A requantization multiplier: value ~= m * 2^(e - 31). m = 0 for a multiplier below 2^-32.
struct Multiplier {
  int32_t m = 0;
  int32_t shift = 31;  // s = 31 - e, in [1, 62]
};

// real = q * 2^e with q in [0.5, 1), for a finite real > 0, from its bits (no frexp: no C library).
inline double split_exponent(double real, int* e) {
  uint64_t u;
  memcpy(&u, &real, sizeof u);
  int be = static_cast<int>((u >> 52) & 0x7FF);
  if (be == 0) {  // subnormal: scale into the normal range first
    real *= 18014398509481984.0;  // 2^54
    memcpy(&u, &real, sizeof u);
    be = static_cast<int>((u >> 52) & 0x7FF) - 54;
  }
  *e = be - 1022;
  u = (u & ~(uint64_t{0x7FF} << 52)) | (uint64_t{1022} << 52);
  double q;
  memcpy(&q, &u, sizeof q);
  return q;
}

// The multiplier of `real` (finite, >= 0, below 2^30; the caller checks). m is rounded half away from zero.
inline Multiplier make_multiplier(double real) {
  Multiplier r;
  if (!(real > 0.0)) return r;
  int e = 0;
  const double q = split_exponent(real, &e);
  int64_t m = static_cast<int64_t>(q * 2147483648.0 + 0.5);  // exact: q has 53 bits, q * 2^31 < 2^31
  if (m == (int64_t{1} << 31)) {
    m >>= 1;
    ++e;
  }
  if (e < -31) return r;
  r.m = static_cast<int32_t>(m);
  r.shift = 31 - e;
  return r;
}

// Whether make_multiplier takes `real`: finite, >= 0 and below 2^30.
inline bool multiplier_ok(double real) { return real >= 0.0 && real < 1073741824.0; }

// round(acc * m * 2^-s), ties toward +infinity, saturated to int32.
inline int32_t apply(int32_t acc, const Multiplier& mul) {
  const int64_t p = static_cast<int64_t>(acc) * mul.m + (int64_t{1} << (mul.shift - 1));
  const int64_t y = p >> mul.shift;  // arithmetic: C++20 defines it, and every C++17 target here does it
  return y > INT32_MAX ? INT32_MAX : y < INT32_MIN ? INT32_MIN : static_cast<int32_t>(y);
}

// The int8 output of an accumulator: the multiplier, the zero point, the clamp [lo, hi].
inline int8_t requantize(int32_t acc, const Multiplier& mul, int32_t zero_point, int32_t lo, int32_t hi) {
  int64_t y = static_cast<int64_t>(apply(acc, mul)) + zero_point;
  y = y < lo ? lo : y > hi ? hi : y;
  return static_cast<int8_t>(y);
}

// ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point); NaN gives the zero point. The ties-to-even
// rounding is the float's own: adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to an integer in the default
// rounding mode (the targets evaluate float in float, FLT_EVAL_METHOD 0); a larger |v| comes out of it far outside
// the int8 range, as it should, and the clamp takes it. Branch-free, so the loops over it vectorize.
inline int8_t quantize(float x, float scale, int32_t zero_point) {
  const float v = x / scale;
  float r = (v + 12582912.0f) - 12582912.0f;
  const float lo = static_cast<float>(kQMin - zero_point), hi = static_cast<float>(kQMax - zero_point);
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  r = v == v ? r : 0.0f;  // NaN: the zero point
  return static_cast<int8_t>(static_cast<int32_t>(r) + zero_point);
}

// (q - zero_point) * scale in float.
inline float dequantize(int8_t q, float scale, int32_t zero_point) {
  return static_cast<float>(static_cast<int32_t>(q) - zero_point) * scale;
}

// The clamp of a fused activation on the int8 output (y_scale, y_zero_point): none [-128, 127], relu [zp, 127],
// relu6 [zp, min(127, zp + round(6 / scale))] (the quantized 6, as quantize rounds it).
inline void activation_range(int kind, float y_scale, int32_t y_zero_point, int32_t* lo, int32_t* hi) {
  *lo = kQMin;
  *hi = kQMax;
  if (kind >= 1 && y_zero_point > *lo) *lo = y_zero_point;
  if (kind == 2) {
    const int32_t six = quantize(6.0f, y_scale, y_zero_point);
    if (six < *hi) *hi = six;
  }
  if (*hi < *lo) *hi = *lo;
}

}  // namespace requant
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
