// The portable kernels' transcendental functions: exp, expm1, log, log1p, tanh, erf, sin, cos of a float.
//
// Why not <cmath>: the C libraries differ. glibc (the host), musl (the boards' static zig builds) and newlib
// (the microcontrollers) return different last bits for expf, logf, tanhf, erff, sinf and cosf on a few percent
// of inputs, so the same portable kernel gave different bits on the host and on a board. These functions use
// only IEEE-754 operations that every target rounds the same way (+, -, *, / and conversions; the build's
// -ffp-contract=off keeps a*b+c unfused) and integer bit operations, so they give the same bits on x86, ARM,
// RISC-V, Hexagon and Cortex-M, whatever libm is linked. Nothing here branches on the CPU or calls the C library.
//
// Accuracy against the correctly rounded float result (tests/runtime/kernels/test_scalar_math.py measures it):
//   exp 1.0 ulp, expm1 1.4, log 0.9, log1p 2.1, tanh 1.7, erf 1.3, sin and cos 0.5 (they work in double).
// Special values as C99 Annex F: NaN in, NaN out; exp(-inf) = 0, exp(+inf) = inf; log(0) = -inf, log(x < 0) =
// NaN; tanh(+-inf) = +-1; erf(+-inf) = +-1; sin/cos(+-inf) = NaN; signed zeros kept where Annex F keeps them.
//
// exp, expm1, log, log1p, tanh and erf stay in float (a microcontroller's FPU is single precision); sin and cos
// reduce the argument exactly with integer arithmetic on the bits of 2/pi (Payne-Hanek) and evaluate in double,
// as nothing in a network calls them in a hot loop. Polynomial coefficients: Taylor's where the range allows,
// else least-squares fits on Chebyshev nodes against mpmath, rounded to float (the fit's residual is in the
// comment beside each set).
#pragma once

// The C headers, not <cstdint>/<cstring>: nothing here needs the C++ library (tests/runtime/scalar_math_probe.cc is
// linked without one).
#include <stdint.h>
#include <string.h>

#include "kernels/common/isa.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace smath {

inline uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
inline float copysign_of(float mag, float sign) {
  return float_of((bits_of(mag) & 0x7fffffffu) | (bits_of(sign) & 0x80000000u));
}
inline bool is_nan(float x) { return (bits_of(x) & 0x7fffffffu) > 0x7f800000u; }

// The nearest integer to v (ties to even), for |v| < 2^22: adding 1.5 * 2^23 leaves no fraction bits.
inline float round_small(float v) {
  const float magic = 12582912.0f;
  return (v + magic) - magic;
}

// 2^k for -149 <= k <= 127.
inline float pow2(int k) {
  if (k >= -126) return float_of(static_cast<uint32_t>(k + 127) << 23);
  return float_of(1u << (k + 149));
}

// v * 2^k for -300 < k < 300, rounding once: the first factor keeps v * 2^(k/2) normal, the second is exact
// unless the result is subnormal.
inline float scale2(float v, int k) {
  if (k >= -126 && k <= 127) return v * pow2(k);  // the same single rounding
  const int half = k / 2;
  const int rest = k - half;
  const float a = half > 127 ? pow2(127) : (half < -126 ? pow2(-126) : pow2(half));
  const float b = rest > 127 ? pow2(127) : (rest < -149 ? 0.0f : pow2(rest));
  return (v * a) * b;
}

// ln 2 in two parts: kLn2Hi has 15 significant bits, so k * kLn2Hi is exact for |k| < 512.
constexpr float kLn2Hi = 0.693145751953125f;     // 0x3f317200
constexpr float kLn2Lo = 1.428606765330187e-06f;  // ln 2 - kLn2Hi
constexpr float kLog2e = 1.44269504088896341f;

// e^r - 1 for |r| <= ln2 / 2: Taylor to r^8 (truncation below 2e-10 relative).
inline float expm1_reduced(float r) {
  float p = 1.0f / 40320.0f;
  p = 1.0f / 5040.0f + r * p;
  p = 1.0f / 720.0f + r * p;
  p = 1.0f / 120.0f + r * p;
  p = 1.0f / 24.0f + r * p;
  p = 1.0f / 6.0f + r * p;
  p = 0.5f + r * p;
  return r + (r * r) * p;
}

// x = k ln2 + r with |r| <= ln2 / 2 (k exact, r with one rounding).
inline float reduce_ln2(float x, int* k) {
  const float kf = round_small(x * kLog2e);
  *k = static_cast<int>(kf);
  return (x - kf * kLn2Hi) - kf * kLn2Lo;
}

inline float exp(float x) {
  if (is_nan(x)) return x;
  if (x > 88.7228317f) return float_of(0x7f800000u);  // e^x > FLT_MAX
  if (x < -104.0f) return 0.0f;                       // below half the smallest subnormal
  int k;
  const float r = reduce_ln2(x, &k);
  return scale2(1.0f + expm1_reduced(r), k);
}

inline float expm1(float x) {
  if (is_nan(x)) return x;
  if (x > 88.7228317f) return float_of(0x7f800000u);
  if (x < -17.5f) return -1.0f;  // e^x below a quarter ulp of 1
  const float a = copysign_of(x, 1.0f);
  if (a < 2.98023224e-08f) return x;  // below 2^-25 the x^2/2 is under half an ulp; keeps -0
  if (a < 0.34657359f) return expm1_reduced(x);
  int k;
  const float q = expm1_reduced(reduce_ln2(x, &k));
  // 2^k (1 + q) - 1, arranged so that the only rounding after q is the last.
  if (k <= -2) return scale2(1.0f + q, k) - 1.0f;              // e^x < 1/2: the subtraction dominates
  if (k <= 24) return pow2(k) * q + (pow2(k) - 1.0f);           // 2^k - 1 exact
  return scale2((q - pow2(-k)) + 1.0f, k);                      // the -1 below an ulp of 2^k: folded into q
}

// log(1 + f) for sqrt(2)/2 - 1 <= f <= sqrt(2) - 1, as f - (hfsq - s (hfsq + R)) with s = f / (2 + f): f is exact
// and the rest is small. R = 2s^2/3 + 2s^4/5 + ... (Taylor in s^2 <= 0.0295 to s^10: truncation below 1e-10).
struct Log1pParts {
  float s, hfsq, r;
};
inline Log1pParts log1p_parts(float f) {
  const float s = f / (2.0f + f);
  const float z = s * s;
  float p = 2.0f / 11.0f;
  p = 2.0f / 9.0f + z * p;
  p = 2.0f / 7.0f + z * p;
  p = 2.0f / 5.0f + z * p;
  p = 2.0f / 3.0f + z * p;
  return {s, 0.5f * f * f, z * p};
}

// |x| = 2^e m with sqrt(2)/2 <= m < sqrt(2), for a finite x > 0 (subnormals included).
inline float split_exponent(float x, int* e) {
  uint32_t ix = bits_of(x);
  int ex = 0;
  if (ix < 0x00800000u) {  // subnormal: scale into the normal range first
    ix = bits_of(x * 33554432.0f);
    ex = -25;
  }
  ex += static_cast<int>(ix >> 23) - 127;
  float m = float_of((ix & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {
    m *= 0.5f;
    ++ex;
  }
  *e = ex;
  return m;
}

inline float log(float x) {
  if (is_nan(x)) return x;
  if (x < 0.0f) return float_of(0x7fc00000u);
  if (x == 0.0f) return float_of(0xff800000u);
  if (x == float_of(0x7f800000u)) return x;
  int e;
  const float f = split_exponent(x, &e) - 1.0f;  // exact
  const Log1pParts p = log1p_parts(f);
  const float ef = static_cast<float>(e);
  return ef * kLn2Hi - ((p.hfsq - (p.s * (p.hfsq + p.r) + ef * kLn2Lo)) - f);
}

inline float log1p(float x) {
  if (is_nan(x)) return x;
  if (x < -1.0f) return float_of(0x7fc00000u);
  if (x == -1.0f) return float_of(0xff800000u);
  if (x == float_of(0x7f800000u)) return x;
  if (x > -0.29289322f && x < 0.41421356f) {  // 1 + x already in [sqrt(2)/2, sqrt(2)): no reduction
    const Log1pParts p = log1p_parts(x);
    return x - (p.hfsq - p.s * (p.hfsq + p.r));
  }
  const float u = 1.0f + x;
  int e;
  const float f = split_exponent(u, &e) - 1.0f;
  // log(1 + x) = log(u) + log(1 + c) with c = (1 + x - u) / u, the part of 1 + x that u rounded away
  const float c = (e > 0 ? 1.0f - (u - x) : x - (u - 1.0f)) / u;
  const Log1pParts p = log1p_parts(f);
  const float ef = static_cast<float>(e);
  return ef * kLn2Hi - ((p.hfsq - (p.s * (p.hfsq + p.r) + (ef * kLn2Lo + c))) - f);
}

inline float tanh(float x) {
  if (is_nan(x)) return x;
  const float a = copysign_of(x, 1.0f);
  float r;
  if (a < 2.44140625e-04f) return x;  // below 2^-12 the x^3/3 is under half an ulp; keeps -0
  if (a < 0.55f) {
    // x + x^3 Q(x^2): least squares on [1e-4, 0.55] (residual 3e-11 relative)
    const float t = x * x;
    float q = 0.002401634817942977f;
    q = -0.008419361896812916f + t * q;
    q = 0.021784715354442596f + t * q;
    q = -0.05395995453000069f + t * q;
    q = 0.13333295285701752f + t * q;
    q = -0.3333333134651184f + t * q;
    return x + x * (t * q);
  }
  if (a >= 9.0f) {
    r = 1.0f;  // 1 - tanh(9) is below a quarter ulp of 1
  } else if (a >= 1.0f) {
    const float t = expm1(2.0f * a);
    r = 1.0f - 2.0f / (t + 2.0f);
  } else {
    const float t = expm1(-2.0f * a);
    r = -t / (t + 2.0f);
  }
  return copysign_of(r, x);
}

inline float erf(float x) {
  if (is_nan(x)) return x;
  const float a = copysign_of(x, 1.0f);
  if (a < 1.0f) {
    // erf(x) = x + x P(x^2): least squares of erf(x)/x - 1 on [1e-6, 1] (residual 1.4e-9 relative); -0 kept
    const float t = x * x;
    float p = 7.898209878476337e-05f;
    p = -0.0008024353883229196f + t * p;
    p = 0.00519005348905921f + t * p;
    p = -0.026854809373617172f + t * p;
    p = 0.11283612251281738f + t * p;
    p = -0.3761262893676758f + t * p;
    p = 0.12837916612625122f + t * p;
    return x + x * p;
  }
  float r = 1.0f;  // erfc(x) < a quarter ulp of 1 from x = 3.92
  if (a < 4.0f) {
    // erf = 1 - e^(-x^2) G(1/x), G least squares of erfc(x) e^(x^2) on [1, 4] in 1/x (residual 3e-9 relative)
    const float u = 1.0f / a;
    float g = 0.03206583485007286f;
    g = -0.18719515204429626f + u * g;
    g = 0.4562140107154846f + u * g;
    g = -0.5615038871765137f + u * g;
    g = 0.25932660698890686f + u * g;
    g = 0.2187654823064804f + u * g;
    g = -0.37169361114501953f + u * g;
    g = 0.019603915512561798f + u * g;
    g = 0.5618857145309448f + u * g;
    g = 0.00011466929572634399f + u * g;
    r = 1.0f - exp(-(a * a)) * g;
  }
  return copysign_of(r, x);
}

// The bits of 2/pi after the binary point, 256 of them (floor(2/pi * 2^256), mpmath): enough for the reduction
// of every finite float.
constexpr uint32_t kTwoOverPi[8] = {0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
                                    0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561};

// 32 bits of 2/pi starting at bit b (1 = the first bit after the point), 1 <= b <= 193. One 64-bit shift: the
// form with two 32-bit shifts read the wrong words in zig's Hexagon build under qemu-hexagon 7.2.
inline uint32_t two_over_pi_bits(int b) {
  const int j = (b - 1) >> 5, o = (b - 1) & 31;
  const uint64_t pair = (static_cast<uint64_t>(kTwoOverPi[j]) << 32) | kTwoOverPi[j + 1];
  return static_cast<uint32_t>(pair >> (32 - o));
}

// |x| = n pi/2 + r with |r| <= pi/4, for a finite |x| >= pi/4 (Payne-Hanek, exact up to 2^-70 relative to r's
// unit): |x| = M 2^s with a 24-bit integer M; the 96 bits of 2/pi from bit max(1, s - 1) on are all that reach
// |x| * 2/pi mod 4 and the 64 bits after its point. Returns n mod 4 (for |x|; the caller handles the sign).
inline int reduce_pio2(float ax, double* r) {
  const uint32_t ix = bits_of(ax);
  const int s = static_cast<int>(ix >> 23) - 127 - 23;
  const uint64_t m = (ix & 0x007fffffu) | 0x00800000u;
  const int i0 = s - 1 < 1 ? 1 : s - 1;
  const uint64_t p2 = m * two_over_pi_bits(i0), p1 = m * two_over_pi_bits(i0 + 32), p0 = m * two_over_pi_bits(i0 + 64);
  const uint64_t lo = p0 + (p1 << 32);
  const uint64_t hi = p2 + (p1 >> 32) + (lo < p0 ? 1u : 0u);
  const int q = i0 + 95 - s;  // the product's fraction bits: 94 <= q <= 120
  const int quadrant = static_cast<int>((hi >> (q - 64)) & 3u);
  const uint64_t frac = (hi << (128 - q)) | (lo >> (q - 64));
  // a fraction >= 1/2 rounds up to the next quadrant: as a signed number it is already frac - 1
  *r = static_cast<double>(static_cast<int64_t>(frac)) * 0x1.921fb54442d18p-64;  // * pi/2 / 2^64
  return (quadrant + static_cast<int>(frac >> 63)) & 3;
}

// sin and cos of |r| <= pi/4 in double: Taylor to r^13 and r^14 (truncation below 3e-14 relative).
inline double sin_reduced(double r) {
  const double z = r * r;
  double p = 1.0 / 6227020800.0;
  p = -1.0 / 39916800.0 + z * p;
  p = 1.0 / 362880.0 + z * p;
  p = -1.0 / 5040.0 + z * p;
  p = 1.0 / 120.0 + z * p;
  p = -1.0 / 6.0 + z * p;
  return r + r * (z * p);
}
inline double cos_reduced(double r) {
  const double z = r * r;
  double p = -1.0 / 87178291200.0;
  p = 1.0 / 479001600.0 + z * p;
  p = -1.0 / 3628800.0 + z * p;
  p = 1.0 / 40320.0 + z * p;
  p = -1.0 / 720.0 + z * p;
  p = 1.0 / 24.0 + z * p;
  return (1.0 - 0.5 * z) + (z * z) * p;
}

// sin (cos = false) or cos (cos = true) of x.
inline float sincos_one(float x, bool cos) {
  const uint32_t ax_bits = bits_of(x) & 0x7fffffffu;
  if (ax_bits > 0x7f800000u) return x;                    // NaN
  if (ax_bits == 0x7f800000u) return float_of(0x7fc00000u);  // +-inf: NaN
  if (ax_bits < 0x39800000u) return cos ? 1.0f : x;  // |x| < 2^-12: within half an ulp; sin keeps -0
  double r = static_cast<double>(x);
  int n = 0;
  if (ax_bits > 0x3f490fdau) {  // |x| > pi/4 (0x3f490fdb is pi/4 rounded up)
    double ra;
    n = reduce_pio2(float_of(ax_bits), &ra);
    if (x < 0.0f) {  // -x = -(n pi/2 + ra) = (-n) pi/2 + (-ra)
      ra = -ra;
      n = (4 - n) & 3;
    }
    r = ra;
  }
  if (cos) n = (n + 1) & 3;  // cos x = sin(x + pi/2)
  double v;
  switch (n) {
    case 0: v = sin_reduced(r); break;
    case 1: v = cos_reduced(r); break;
    case 2: v = -sin_reduced(r); break;
    default: v = -cos_reduced(r); break;
  }
  return static_cast<float>(v);
}
inline float sin(float x) { return sincos_one(x, false); }
inline float cos(float x) { return sincos_one(x, true); }

}  // namespace smath
}  // namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
