// The fused activations in AVX-512 registers, 16 floats at a time, for the avx512 set's convolution epilogues: the
// vector operations kernels/common/vector_activation.h is written over (the avx2 set's are 8 floats wide and give the
// same bits).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/avx512.h"
#include "kernels/common/activation.h"
#include "kernels/common/vector_activation.h"

namespace dtorch {
namespace kernels {
namespace avx512 {

// The all-lanes mask forms where the plain intrinsics expand _mm512_undefined_ps (GCC 12's -Wmaybe-uninitialized).
struct V512 {
  using T = __m512;
  static constexpr int64_t kLanes = 16;
  static T set1(float v) { return _mm512_set1_ps(v); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T fnmadd(T a, T b, T c) { return _mm512_fnmadd_ps(a, b, c); }
  static T vmax(T a, T b) { return kernels::vmax(a, b); }
  static T vmin(T a, T b) { return kernels::vmin(a, b); }
  static T round(T x) {
    return _mm512_mask_roundscale_ps(x, __mmask16{0xFFFF}, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static T scale2n(T p, T n) { return _mm512_mask_scalef_ps(p, __mmask16{0xFFFF}, p, n); }
  static T select_lt(T x, T y, T a, T b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_LT_OQ), b, a); }
  static T select_gt(T x, T y, T a, T b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_GT_OQ), b, a); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static T load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_n(float* p, T v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
};
using Activations = VectorActivations<V512>;

// The fused activation a of v in registers (*done = true), or v unchanged and *done = false for gelu, which the
// callers apply to the stored values (activate_rows).
__attribute__((always_inline)) inline __m512 activate(const Activation& a, __m512 v, bool* done) {
  return Activations::activate(a, v, done);
}

// p[i] = a(p[i]) for i in [0, n), the same function as activate() (gelu: portable's).
inline void activate_rows(const Activation& a, float* p, int64_t n) { Activations::rows(a, p, n); }

}  // namespace avx512
}  // namespace kernels
}  // namespace dtorch
