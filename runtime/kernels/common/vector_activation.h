// The fused activations on SIMD vectors, written once for the FMA kernel sets (kernels/avx512: 16 floats,
// kernels/avx2: 8) over a small traits type V of the set's vector operations, so that both sets compute every value
// with the same operations in the same order: the same bits from either set.
//
// The clamps (relu, relu6, hardtanh), leaky_relu, hardswish and hardsigmoid are portable's float operations in
// portable's order (kernels/common/activation.h): the same bits as portable. sigmoid, silu, tanh, gelu and gelu_tanh
// need e^x, which portable takes from kernels/common/scalar_math.h and which is exp() below here (gelu's erf: a fit
// of erfc around it), so they are within the sets' tolerance of portable (1e-5 x the output's scale; e^x's relative
// error is a few units in the last place) instead of equal. activate() in registers and rows() over memory run the same function on every
// value, so every path of a set (blocked or NCHW output, tiles or the GEMM) gives the same result.
//
// Before: every activation but the clamps ran portable's scalar function per stored value (std::exp per element),
// which made EfficientNet-B0 (silu after almost every convolution) 4.7x ONNX Runtime's time on the avx512 set.
//
// V provides: T (the vector type), kLanes, set1, add, sub, mul, div, fmadd(a, b, c) = a b + c, fnmadd(a, b, c) =
// c - a b, vmax / vmin with maxps / minps semantics (the second operand when either is NaN), round (to nearest
// even), scale2n(p, n) = p 2^n exactly where that is a normal float (inf above), select_lt(x, y, a, b) = x < y ? a : b
// and select_gt likewise (ordered compares: NaN gives b), load / store, and load_n / store_n for the first n < kLanes
// lanes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/activation.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

#define DTORCH_VA_INLINE __attribute__((always_inline)) inline

template <class V>
struct VectorActivations {
  using T = typename V::T;

  // e^x lane by lane: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts: 0.693359375 - 2.12194440e-4), e^r by
  // its Taylor series to r^7 (truncation under 2e-8 relative on that range), times 2^n. x is first clamped to
  // [-104, 89], beyond which the result is already 0 or inf; NaN passes the clamps and stays NaN. Results below
  // 2^-126 (x < -87.3) may differ between sets in their last bits, but every activation here adds 1 to them first.
  static DTORCH_VA_INLINE T exp(T x) {
    x = V::vmin(V::set1(89.0f), V::vmax(V::set1(-104.0f), x));
    const T n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
    T r = V::fnmadd(n, V::set1(0.693359375f), x);
    r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
    return exp_reduced(r, n);
  }

  // e^(xh + xl) for xh + xl in [-103, 88] (no clamps) and |xl| < 2: as exp(), with xh (exactly representable, e.g. a
  // rounded -z^2) reduced exactly by n ln2 before the smaller xl is added, so the result keeps e^x's relative accuracy
  // where the sum itself would lose it (a float near -80 is only known to 4e-6).
  static DTORCH_VA_INLINE T exp_sum(T xh, T xl) {
    const T n = V::round(V::mul(V::add(xh, xl), V::set1(1.44269504088896341f)));
    T r = V::fnmadd(n, V::set1(0.693359375f), xh);
    r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
    return exp_reduced(V::add(r, xl), n);
  }

  // e^r 2^n for |r| <= about ln2 / 2: the Taylor series of e^r to r^7, scaled.
  static DTORCH_VA_INLINE T exp_reduced(T r, T n) {
    T p = V::set1(1.0f / 5040.0f);
    p = V::fmadd(p, r, V::set1(1.0f / 720.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 120.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 24.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 6.0f));
    p = V::fmadd(p, r, V::set1(0.5f));
    p = V::fmadd(p, r, V::set1(1.0f));
    p = V::fmadd(p, r, V::set1(1.0f));
    return V::scale2n(p, n);
  }

  // 1 / (1 + e^-x): 0 where e^-x is inf, 1 where it is 0.
  static DTORCH_VA_INLINE T sigmoid(T x) {
    const T one = V::set1(1.0f);
    return V::div(one, V::add(one, exp(V::sub(V::set1(0.0f), x))));
  }

  // |x| < 0.25: tanh's odd series to x^11 (truncation under 1e-10 relative); else 1 - 2 / (e^2x + 1), +-1 where
  // e^2x is inf or 0 (there the subtraction loses at most a few 1e-8, relative to values above 0.24).
  static DTORCH_VA_INLINE T tanh(T x) {
    const T one = V::set1(1.0f);
    const T far = V::sub(one, V::div(V::set1(2.0f), V::add(exp(V::add(x, x)), one)));
    const T x2 = V::mul(x, x);
    T q = V::set1(-1382.0f / 155925.0f);
    q = V::fmadd(q, x2, V::set1(62.0f / 2835.0f));
    q = V::fmadd(q, x2, V::set1(-17.0f / 315.0f));
    q = V::fmadd(q, x2, V::set1(2.0f / 15.0f));
    q = V::fmadd(q, x2, V::set1(-1.0f / 3.0f));
    const T near = V::fmadd(V::mul(x, x2), q, x);
    const T ax = V::vmax(x, V::sub(V::set1(0.0f), x));  // |x|; NaN stays NaN and takes `far`
    return V::select_lt(ax, V::set1(0.25f), near, far);
  }

  // gelu (erf form) as x erfc(-x / sqrt2) / 2, with erfc(z) for z >= 0 as t e^(-z^2 + P(t)), t = 1 / (1 + z / 2)
  // and P the degree-9 fit of Numerical Recipes' erfcc (relative error under 1.2e-7 for every z >= 0), and
  // erfc(-z) = 2 - erfc(z): so x > 0 gives x (1 - h) and x <= 0 gives x h, with h = erfc(|x| / sqrt2) / 2 (0 for
  // |x| >= 14, where it is below 1e-44). -z^2 = -x^2 / 2 is split exactly (x x rounded, plus its FMA residual; not
  // from a rounded x / sqrt2, whose 6e-8 would grow to 5e-6 in e^-z^2 at z = 9) and e^(-z^2 + P) taken by exp_sum,
  // so the negative tail keeps its relative accuracy (under 4e-7 against float64 down to the smallest normal
  // results), unlike portable's (erf(x / sqrt2) + 1) x / 2, whose 1 + erf cancels for x below about -3; the two
  // agree within the sets' tolerance. +inf gives +inf and -inf NaN (-inf x 0), as portable; NaN stays NaN.
  static DTORCH_VA_INLINE T gelu(T x) {
    const T one = V::set1(1.0f), zero = V::set1(0.0f), half = V::set1(0.5f), far = V::set1(14.0f);
    const T ax = V::vmax(x, V::sub(zero, x));  // |x|; NaN stays NaN
    const T xc = V::vmin(far, ax);
    const T t = V::div(one, V::fmadd(V::set1(0.35355339059327376f), xc, one));  // 1 / (1 + z / 2)
    T p = V::set1(0.17087277f);
    p = V::fmadd(p, t, V::set1(-0.82215223f));
    p = V::fmadd(p, t, V::set1(1.48851587f));
    p = V::fmadd(p, t, V::set1(-1.13520398f));
    p = V::fmadd(p, t, V::set1(0.27886807f));
    p = V::fmadd(p, t, V::set1(-0.18628806f));
    p = V::fmadd(p, t, V::set1(0.09678418f));
    p = V::fmadd(p, t, V::set1(0.37409196f));
    p = V::fmadd(p, t, V::set1(1.00002368f));
    p = V::fmadd(p, t, V::set1(-1.26551223f));
    const T sq = V::mul(xc, xc);                           // z^2 = x^2 / 2 = (sq + sq_lo) / 2 exactly
    const T sq_lo = V::fmadd(xc, xc, V::sub(zero, sq));
    const T e = exp_sum(V::mul(sq, V::set1(-0.5f)), V::fnmadd(sq_lo, half, p));
    const T h = V::select_lt(ax, far, V::mul(V::mul(t, e), half), zero);
    return V::select_gt(x, zero, V::mul(x, V::sub(one, h)), V::mul(x, h));
  }

  // x < lo ? lo : (x > hi ? hi : x), NaN passing through: portable's hardtanh_f.
  static DTORCH_VA_INLINE T hardtanh(T x, float lo, float hi) {
    const T vlo = V::set1(lo), vhi = V::set1(hi);
    return V::select_lt(x, vlo, vlo, V::select_gt(x, vhi, vhi, x));
  }

  // The fused activation K of v; a holds its parameters.
  template <ActKind K>
  static DTORCH_VA_INLINE T apply(const Activation& a, T v) {
    if constexpr (K == ActKind::kRelu) return V::vmax(V::set1(0.0f), v);
    if constexpr (K == ActKind::kRelu6) return V::vmin(V::set1(6.0f), V::vmax(V::set1(0.0f), v));
    if constexpr (K == ActKind::kHardtanh) return V::vmin(V::set1(a.hi), V::vmax(V::set1(a.lo), v));
    if constexpr (K == ActKind::kLeakyRelu) return V::select_gt(v, V::set1(0.0f), v, V::mul(v, V::set1(a.alpha)));
    if constexpr (K == ActKind::kSigmoid) return sigmoid(v);
    if constexpr (K == ActKind::kTanh) return tanh(v);
    if constexpr (K == ActKind::kSilu) return V::mul(sigmoid(v), v);
    if constexpr (K == ActKind::kHardswish)  // x * hardtanh(x + 3, 0, 6) * (1 / 6), left to right
      return V::mul(V::mul(v, hardtanh(V::add(v, V::set1(3.0f)), 0.0f, 6.0f)), V::set1(1.0f / 6.0f));
    if constexpr (K == ActKind::kHardsigmoid)
      return V::mul(hardtanh(V::add(v, V::set1(3.0f)), 0.0f, 6.0f), V::set1(1.0f / 6.0f));
    if constexpr (K == ActKind::kGelu) return gelu(v);
    if constexpr (K == ActKind::kGeluTanh) {  // ((tanh(0.79788456 (x + 0.044715 x x x)) + 1) x) 0.5
      const T cube = V::mul(V::mul(V::mul(V::set1(0.044715f), v), v), v);
      const T inner = V::mul(V::set1(0.79788456080286536f), V::add(v, cube));
      return V::mul(V::mul(V::add(tanh(inner), V::set1(1.0f)), v), V::set1(0.5f));
    }
    return v;
  }

  // Calls f(std::integral_constant<ActKind, K>{}) for k's vector form K and returns true, or returns false where
  // there is none (none): the one list of the kinds apply() takes, for activate() and rows().
  template <class F>
  static DTORCH_VA_INLINE bool with_vector_form(ActKind k, F&& f) {
    switch (k) {
      case ActKind::kRelu: f(std::integral_constant<ActKind, ActKind::kRelu>{}); return true;
      case ActKind::kRelu6: f(std::integral_constant<ActKind, ActKind::kRelu6>{}); return true;
      case ActKind::kHardtanh: f(std::integral_constant<ActKind, ActKind::kHardtanh>{}); return true;
      case ActKind::kLeakyRelu: f(std::integral_constant<ActKind, ActKind::kLeakyRelu>{}); return true;
      case ActKind::kSigmoid: f(std::integral_constant<ActKind, ActKind::kSigmoid>{}); return true;
      case ActKind::kTanh: f(std::integral_constant<ActKind, ActKind::kTanh>{}); return true;
      case ActKind::kSilu: f(std::integral_constant<ActKind, ActKind::kSilu>{}); return true;
      case ActKind::kHardswish: f(std::integral_constant<ActKind, ActKind::kHardswish>{}); return true;
      case ActKind::kHardsigmoid: f(std::integral_constant<ActKind, ActKind::kHardsigmoid>{}); return true;
      case ActKind::kGelu: f(std::integral_constant<ActKind, ActKind::kGelu>{}); return true;
      case ActKind::kGeluTanh: f(std::integral_constant<ActKind, ActKind::kGeluTanh>{}); return true;
      default: return false;
    }
  }

  // The fused activation a of v in registers (*done = true; false only for a kind with no vector form).
  static DTORCH_VA_INLINE T activate(const Activation& a, T v, bool* done) {
    *done = true;
    if (a.kind == ActKind::kNone) return v;
    T out = v;
    *done = with_vector_form(a.kind, [&](auto k) __attribute__((always_inline)) {
      out = apply<decltype(k)::value>(a, v);
    });
    return out;
  }

  // p[i] = a(p[i]) for i in [0, n): four independent vectors at a time (e^x's chain is long), then single ones and
  // a partial last one.
  template <ActKind K>
  static void rows_as(const Activation& a, float* p, int64_t n) {
    constexpr int64_t L = V::kLanes;
    int64_t i = 0;
    for (; i + 4 * L <= n; i += 4 * L) {
      const T v0 = apply<K>(a, V::load(p + i)), v1 = apply<K>(a, V::load(p + i + L)),
              v2 = apply<K>(a, V::load(p + i + 2 * L)), v3 = apply<K>(a, V::load(p + i + 3 * L));
      V::store(p + i, v0);
      V::store(p + i + L, v1);
      V::store(p + i + 2 * L, v2);
      V::store(p + i + 3 * L, v3);
    }
    for (; i + L <= n; i += L) V::store(p + i, apply<K>(a, V::load(p + i)));
    if (i < n) V::store_n(p + i, apply<K>(a, V::load_n(p + i, static_cast<int>(n - i))), static_cast<int>(n - i));
  }

  // p[i] = a(p[i]) for i in [0, n), as activate() in registers (a kind with no vector form: portable's function).
  static void rows(const Activation& a, float* p, int64_t n) {
    if (a.kind == ActKind::kNone) return;
    if (!with_vector_form(a.kind, [&](auto k) { rows_as<decltype(k)::value>(a, p, n); }))
      bias_activation(a, 0.0f, p, n);
  }
};

#undef DTORCH_VA_INLINE

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
