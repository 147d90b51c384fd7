// The AArch64 dot-product kernel set ("neon64dot"): int8 kernels built on SDOT (Armv8.2-A's optional, Armv8.4-A's
// mandatory dot-product instructions: each 32-bit lane adds four s8 x s8 products), built into the aarch64 boards
// whose board file lists "dotprod" in its `isa` (Cortex-A55, A76, A78: rk3588's both clusters). Chosen at build
// time: no run-time check.
//
// Numerics: bit-exact with the portable int8 kernels (kernels/common/requant.h): the int32 sums are exact whatever
// their order and the requantization is the same integer arithmetic (SRSHL is the rounding shift with ties up), so
// the set is "exact" (both kernel policies take it); tests/edge/test_board_kernels.py holds it to the portable bits
// under QEMU.
//
// Build: the set's files are compiled only for aarch64 (kernel_set.json), with DTORCH_KERNEL_ISA=isa_neon64dot.
// The dot-product instructions are switched on here, by a pragma, not by a flag: GCC spells it -march=...+dotprod
// and zig (LLVM) as a CPU feature, and a board's -mcpu already names one of them.
#pragma once

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "kernels/neon64dot is built only for aarch64 (Advanced SIMD)"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#define DTORCH_NEON64DOT_END _Pragma("clang attribute pop")  // at the end of the file: the registration's
#else
#pragma GCC target("arch=armv8.2-a+dotprod")
#define DTORCH_NEON64DOT_END
#endif

#include <arm_neon.h>
#include <stdint.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/requant.h"

#if defined(__clang__)
#define DTORCH_NEON64DOT_UNROLL _Pragma("unroll")
#else
#define DTORCH_NEON64DOT_UNROLL _Pragma("GCC unroll 16")
#endif

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/neon64dot: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The set is chosen at build time by the board's ISA list.
inline bool neon64dot_supported() { return true; }

// requant::requantize in vectors: Requant holds one multiplier (m, s) in the form its lanes use.
//   s > 31: apply(acc) = SRSHL(SQDMULH(acc, m), -(s - 31)). SQDMULH gives H = floor(acc * m / 2^31) exactly
//           (m > 0: never saturates); with P = acc * m = H * 2^31 + L (0 <= L < 2^31) and u = s - 31 >= 1,
//           floor((P + 2^(s - 1)) / 2^s) = floor((H + 2^(u - 1) + L / 2^31) / 2^u) = (H + 2^(u - 1)) >> u,
//           since H + 2^(u - 1) is an integer and L / 2^31 < 1: the single rounding, in 32-bit lanes.
//   s = 31: apply(acc) = SQRDMULH(acc, m) = (2 * acc * m + 2^31) >> 32, the same expression (m = 0 gives 0).
//   s < 31 (a multiplier >= 1, rare): the 64-bit product, SRSHL, saturated to int32 (SQXTN).
// Then the zero point and the clamp on the narrowed lanes: saturating int16 and int8 steps keep every value
// outside [lo, hi] outside it, so the clamp gives requantize's bits.
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
  const int64x2_t p1 = vrshlq_s64(vmull_high_s32(acc, r.m), sh);
  return vqmovn_high_s64(vqmovn_s64(p0), p1);
}

// 8 applied lanes (a: 0-3, b: 4-7) -> int16 with the zero point (saturating).
__attribute__((always_inline)) inline int16x8_t requant_zp8(int32x4_t a, int32x4_t b, const Requant& r) {
  return vqaddq_s16(vqmovn_high_s32(vqmovn_s32(a), b), r.zero_point);
}

// 16 int16 lanes with the zero point -> the clamped int8 outputs.
__attribute__((always_inline)) inline int8x16_t requant_clamp16(int16x8_t a, int16x8_t b, const Requant& r) {
  return vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(a), b), r.lo), r.hi);
}

// requantize of 16 accumulators (a: lanes 0-3 ... d: 12-15).
__attribute__((always_inline)) inline int8x16_t requantize16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d,
                                                             const Requant& r) {
  return requant_clamp16(requant_zp8(requant_apply(a, r), requant_apply(b, r), r),
                         requant_zp8(requant_apply(c, r), requant_apply(d, r), r), r);
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_NEON64DOT_KERNEL: as DTORCH_REGISTER_KERNEL, in the "neon64dot" set (bit-exact), at the set's rank
// (kernel_set.json). One per file, its last line (it ends the dot-product region the header opened). The last
// argument is the kernel's prepare function (core/kernel.h) or nullptr.
#define DTORCH_REGISTER_NEON64DOT_KERNEL(op, dtype, infer, run, prepare)                                          \
  DTORCH_REGISTER_ISA_KERNEL("neon64dot", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::neon64dot_supported, op, \
                             dtype, infer, run, prepare);                                                        \
  DTORCH_NEON64DOT_END static_assert(true, "the registration ends with the caller's semicolon")
