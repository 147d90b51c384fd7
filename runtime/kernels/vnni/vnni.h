// The x86-64 AVX-512 VNNI kernel set ("vnni"): int8 kernels built on vpdpbusd (each 32-bit lane adds four u8 x s8
// products), registered only on CPUs with AVX-512 F/BW/DQ/VL and VNNI.
//
// Numerics: bit-exact with the portable int8 kernels (kernels/common/requant.h): the int32 sums are exact whatever
// their order, and the requantization is the same integer arithmetic, so the set is "exact" (both kernel policies
// take it) and tests/runtime/kernels/test_quant_kernels.py holds it to the portable bits.
#pragma once

#if !defined(__x86_64__) || !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || \
    !defined(__AVX512VNNI__)
#error "kernels/vnni is built only for x86-64, with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni"
#endif

#include <immintrin.h>
#include <stdint.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/requant.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/vnni: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Whether this CPU runs the vnni kernel set (and its OS saves the AVX-512 state).
__attribute__((target("no-sse3"), noinline)) inline bool x86_vnni_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni");
}

// requant::requantize of 16 int32 lanes with one multiplier: round(acc * m * 2^-s) (ties up) in 64-bit lanes, the
// clamp [lo, hi] - zero point applied before the zero point is added (the same as saturating to int32 first: the
// clamp is far inside int32), then the 16 int8 results.
__attribute__((always_inline)) inline __m128i requantize16(__m512i acc, const requant::Multiplier& mul, int32_t zero_point, int32_t lo,
                            int32_t hi) {
  // The all-lanes mask forms throughout: GCC 12's plain forms expand _mm512_undefined_epi32, which trips
  // -Wmaybe-uninitialized under -Werror.
  constexpr __mmask8 k8 = 0xFF;
  const __m512i m = _mm512_set1_epi64(mul.m);
  const __m512i round = _mm512_set1_epi64(int64_t{1} << (mul.shift - 1));
  const __m128i s = _mm_cvtsi32_si128(mul.shift);
  const __m512i vlo = _mm512_set1_epi64(lo - zero_point), vhi = _mm512_set1_epi64(hi - zero_point);
  auto lanes = [&](__m512i v) {  // the int32 in the low half of each 64-bit lane, times m, rounded, shifted, clamped
    __m512i p = _mm512_mask_mul_epi32(v, k8, v, m);
    p = _mm512_mask_sra_epi64(p, k8, _mm512_mask_add_epi64(p, k8, p, round), s);
    return _mm512_mask_min_epi64(p, k8, _mm512_mask_max_epi64(p, k8, p, vlo), vhi);
  };
  const __m512i even = lanes(acc);
  const __m512i odd = lanes(_mm512_mask_srli_epi64(acc, k8, acc, 32));
  const __m512i both = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_mask_slli_epi64(odd, k8, odd, 32));
  const __m512i y = _mm512_mask_add_epi32(both, __mmask16{0xFFFF}, both, _mm512_set1_epi32(zero_point));
  return _mm512_mask_cvtepi32_epi8(_mm_setzero_si128(), __mmask16{0xFFFF}, y);
}

// requant::apply of 16 int32 lanes with one multiplier whose shift s is in [32, 54] (multipliers in [2^-24, 2^-1)),
// plus a zero point folded into r: with m the multiplier in each 64-bit lane, r = 2^(s-1) + zero_point * 2^s and
// cnt = s - 32 in every lane (fast_count), the 64-bit products of the even and odd lanes plus r, their high halves
// (floor by 2^32), then an arithmetic shift by s - 32: floor(floor(a / 2^32) / 2^(s-32)) = floor(a / 2^s).
// |acc * m| < 2^62 and |zero_point * 2^s| <= 2^61 keep a inside int64; the result is f + zero_point with |f| < 2^30
// (no saturation). Port use (Sapphire Rapids): the multiplies and the variable shift on port 0, the odd lanes' move
// (vpshufd) and the high halves' gathering (vpermt2d) on port 5, beside the vpdpbusd sums on port 0.
__attribute__((always_inline)) inline __m512i mul_shift_fast(__m512i acc, __m512i m, __m512i r, __m512i cnt) {
  constexpr __mmask8 k8 = 0xFF;  // the all-lanes mask forms: see requantize16
  constexpr __mmask16 k16 = 0xFFFF;
  const __m512i high = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  const __m512i even = _mm512_maskz_add_epi64(k8, _mm512_maskz_mul_epi32(k8, acc, m), r);
  const __m512i odd_lo = _mm512_maskz_shuffle_epi32(k16, acc, _MM_PERM_DDBB);  // lane 2j + 1 into lane 2j
  const __m512i odd = _mm512_maskz_add_epi64(k8, _mm512_maskz_mul_epi32(k8, odd_lo, m), r);
  return _mm512_maskz_srav_epi32(k16, _mm512_maskz_permutex2var_epi32(k16, even, high, odd), cnt);
}

// mul_shift_fast's count for a multiplier's shift s.
inline __m512i fast_count(int32_t shift) { return _mm512_set1_epi32(shift - 32); }

// requant::requantize of 16 lanes on mul_shift_fast (r with the output zero point): the saturating narrowing to int8
// is requantize's clamp to [-128, 127], then the activation's [lo, hi] in bytes.
__attribute__((always_inline)) inline __m128i requant_fast(__m512i acc, __m512i m, __m512i r, __m512i cnt, __m128i lo8,
                                                           __m128i hi8) {
  return _mm_min_epi8(_mm_max_epi8(_mm512_maskz_cvtsepi32_epi8(__mmask16{0xFFFF}, mul_shift_fast(acc, m, r, cnt)), lo8),
                      hi8);
}

// Whether a multiplier takes the fast path, and its r (2^(s-1) + zero_point * 2^s) when it does.
inline bool fast_multiplier(const requant::Multiplier& mul, int32_t zero_point, int64_t* r) {
  if (mul.shift < 32 || mul.shift > 54) return false;
  *r = (int64_t{1} << (mul.shift - 1)) + static_cast<int64_t>(zero_point) * (int64_t{1} << mul.shift);
  return true;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_VNNI_KERNEL: as DTORCH_REGISTER_KERNEL, in the "vnni" set (bit-exact), and only on CPUs that
// have it. One per file. The last argument is the kernel's prepare function (core/kernel.h PrepareFn).
#define DTORCH_REGISTER_VNNI_KERNEL(op, dtype, infer, run, prepare)                                              \
  DTORCH_REGISTER_ISA_KERNEL("vnni", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::x86_vnni_supported, op, \
                             dtype, infer, run, prepare)
