// The fused activations in AVX2 registers, 8 floats at a time, for the avx2 set's convolution epilogues: the vector
// operations kernels/common/vector_activation.h is written over (the avx512 set's are 16 floats wide and give the
// same bits).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/common/activation.h"
#include "kernels/common/vector_activation.h"

namespace dtorch {
namespace kernels {
namespace avx2 {

struct V256 {
  using T = __m256;
  static constexpr int64_t kLanes = 8;
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T fnmadd(T a, T b, T c) { return _mm256_fnmadd_ps(a, b, c); }
  static T vmax(T a, T b) { return _mm256_max_ps(a, b); }  // maxps: b when either is NaN
  static T vmin(T a, T b) { return _mm256_min_ps(a, b); }
  static T round(T x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p 2^n as (p 2^n1) 2^n2 with n1 = floor(n / 2), n2 = n - n1, both powers normal floats for |n| <= 252: the
  // first product is exact, the second rounds once, as vscalefps does.
  static T scale2n(T p, T n) {
    const __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const T s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const T s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  static T select_lt(T x, T y, T a, T b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, y, _CMP_LT_OQ)); }
  static T select_gt(T x, T y, T a, T b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, y, _CMP_GT_OQ)); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  // The first n < 8 floats through a buffer (the set avoids masked accesses: see avx2.h), 0 in the other lanes.
  static T load_n(const float* p, int n) {
    alignas(32) float t[8] = {};
    std::memcpy(t, p, static_cast<size_t>(n) * sizeof(float));
    return _mm256_load_ps(t);
  }
  static void store_n(float* p, T v, int n) { store_lanes(p, v, n); }
};
using Activations = VectorActivations<V256>;

// The fused activation a of v in registers (*done = true), or v unchanged and *done = false for gelu, which the
// callers apply to the stored values (activate_rows).
__attribute__((always_inline)) inline __m256 activate(const Activation& a, __m256 v, bool* done) {
  return Activations::activate(a, v, done);
}

// p[i] = a(p[i]) for i in [0, n), the same function as activate() (gelu: portable's).
inline void activate_rows(const Activation& a, float* p, int64_t n) { Activations::rows(a, p, n); }

}  // namespace avx2
}  // namespace kernels
}  // namespace dtorch
