// kernels/common/requant.h's requantize in Arm NEON vectors, for the int8 kernel sets of both Arm architectures
// (kernels/neon64dot: AArch64 Advanced SIMD; kernels/neon32int8: armv7-a NEON). Each set includes it from its own
// header, after switching on its instructions, and compiles it in its own DTORCH_ISA namespace.
//
// Requant holds one multiplier (m, s) in the form its lanes use.
//   s > 31: apply(acc) = SRSHL(SQDMULH(acc, m), -(s - 31)). SQDMULH gives H = floor(acc * m / 2^31) exactly
//           (m > 0: never saturates); with P = acc * m = H * 2^31 + L (0 <= L < 2^31) and u = s - 31 >= 1,
//           floor((P + 2^(s - 1)) / 2^s) = floor((H + 2^(u - 1) + L / 2^31) / 2^u) = (H + 2^(u - 1)) >> u,
//           since H + 2^(u - 1) is an integer and L / 2^31 < 1: the single rounding, in 32-bit lanes.
//   s = 31: apply(acc) = SQRDMULH(acc, m) = (2 * acc * m + 2^31) >> 32, the same expression (m = 0 gives 0).
//   s < 31 (a multiplier >= 1, rare): the 64-bit product, SRSHL, saturated to int32 (SQXTN).
// Then the zero point and the clamp on the narrowed lanes: saturating int16 and int8 steps keep every value
// outside [lo, hi] outside it, so the clamp gives requantize's bits. armv7 NEON has the same instructions (VQDMULH,
// VQRDMULH, VRSHL, VMULL.S32, VQMOVN); only AArch64 has the "high half" forms, which the armv7 branches below
// spell as the low-half form on vget_high.
#pragma once

#if !defined(__ARM_NEON)
#error "kernels/common/requant_neon.h needs Arm NEON (Advanced SIMD)"
#endif

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/isa.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct Requant {
  int32x4_t m;
  int32x4_t shift;  // -(s - 31), or -s for the 64-bit form
  int kind;         // 0: s > 31, 1: s = 31, 2: s < 31
  int16x8_t zero_point;
  int8x16_t lo, hi;
};

inline Requant requant_of(const requant::Multiplier& mul, int32_t zero_point, int32_t lo, int32_t hi) {
  Requant r;
  r.m = vdupq_n_s32(mul.m);
  r.kind = mul.shift > 31 ? 0 : mul.shift == 31 ? 1 : 2;
  r.shift = vdupq_n_s32(r.kind == 2 ? -mul.shift : 31 - mul.shift);
  r.zero_point = vdupq_n_s16(static_cast<int16_t>(zero_point));
  r.lo = vdupq_n_s8(static_cast<int8_t>(lo));
  r.hi = vdupq_n_s8(static_cast<int8_t>(hi));
  return r;
}

// requant::apply of 4 lanes. K: the multiplier's kind when the caller knows it (0, 1 or 2), else -1.
template <int K = -1>
__attribute__((always_inline)) inline int32x4_t requant_apply(int32x4_t acc, const Requant& r) {
  if (K == 0 || (K < 0 && r.kind == 0)) return vrshlq_s32(vqdmulhq_s32(acc, r.m), r.shift);
  if (K == 1 || (K < 0 && r.kind == 1)) return vqrdmulhq_s32(acc, r.m);
  const int64x2_t sh = vmovl_s32(vget_low_s32(r.shift));
  const int64x2_t p0 = vrshlq_s64(vmull_s32(vget_low_s32(acc), vget_low_s32(r.m)), sh);
#if defined(__aarch64__)
  const int64x2_t p1 = vrshlq_s64(vmull_high_s32(acc, r.m), sh);
  return vqmovn_high_s64(vqmovn_s64(p0), p1);
#else
  const int64x2_t p1 = vrshlq_s64(vmull_s32(vget_high_s32(acc), vget_high_s32(r.m)), sh);
  return vcombine_s32(vqmovn_s64(p0), vqmovn_s64(p1));
#endif
}

// 8 applied lanes (a: 0-3, b: 4-7) -> int16 with the zero point (saturating).
__attribute__((always_inline)) inline int16x8_t requant_zp8(int32x4_t a, int32x4_t b, const Requant& r) {
#if defined(__aarch64__)
  return vqaddq_s16(vqmovn_high_s32(vqmovn_s32(a), b), r.zero_point);
#else
  return vqaddq_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b)), r.zero_point);
#endif
}

// 16 int16 lanes with the zero point -> the clamped int8 outputs.
__attribute__((always_inline)) inline int8x16_t requant_clamp16(int16x8_t a, int16x8_t b, const Requant& r) {
#if defined(__aarch64__)
  return vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(a), b), r.lo), r.hi);
#else
  return vminq_s8(vmaxq_s8(vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)), r.lo), r.hi);
#endif
}

// requantize of 16 accumulators (a: lanes 0-3 ... d: 12-15).
__attribute__((always_inline)) inline int8x16_t requantize16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d,
                                                             const Requant& r) {
  return requant_clamp16(requant_zp8(requant_apply(a, r), requant_apply(b, r), r),
                         requant_zp8(requant_apply(c, r), requant_apply(d, r), r), r);
}

// v's first 4 bytes to y (any alignment: armv7's lane stores of an int32_t* may assume 4-byte alignment).
__attribute__((always_inline)) inline void store4(int8x16_t v, int8_t* y) {
#if defined(__aarch64__)
  vst1q_lane_s32(reinterpret_cast<int32_t*>(y), vreinterpretq_s32_s8(v), 0);
#else
  const uint32_t t = vgetq_lane_u32(vreinterpretq_u32_s8(v), 0);
  memcpy(y, &t, 4);
#endif
}

// The first n (< 16) bytes of v to y: 8, 4, 2 and 1 bytes as n's bits say, shifting v down after each (no call, no
// byte loop: a tile's accumulators stay in registers); never a byte past y[n - 1], which another unit writes.
__attribute__((always_inline)) inline void store_partial(int8x16_t v, int n, int8_t* y) {
  if (n & 8) {
    vst1_s8(y, vget_low_s8(v));
    y += 8;
    v = vextq_s8(v, v, 8);
  }
  if (n & 4) {
    store4(v, y);
    y += 4;
    v = vextq_s8(v, v, 4);
  }
  if (n & 2) {
#if defined(__aarch64__)
    vst1q_lane_s16(reinterpret_cast<int16_t*>(y), vreinterpretq_s16_s8(v), 0);
#else
    const uint16_t t = vgetq_lane_u16(vreinterpretq_u16_s8(v), 0);
    memcpy(y, &t, 2);
#endif
    y += 2;
    v = vextq_s8(v, v, 2);
  }
  if (n & 1) vst1q_lane_s8(y, v, 0);
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
