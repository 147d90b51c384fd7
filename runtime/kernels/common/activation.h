// Scalar activation functions (shared by the unary kernels and by the fused `activation` attribute of
// conv2d, conv_transpose2d, linear and add) and the parser of that attribute.
//
// Each function follows the eager implementation's float32 operation order (dtorch/nn/ops/activation.py,
// dtorch/ops/elementwise.py) so results agree closely with eager mode; NaN inputs give NaN outputs as
// NumPy's maximum/clip do. Nothing here allocates except the error message of parse_activation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/common/scalar_math.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

inline float relu_f(float x) { return x < 0.0f ? 0.0f : x; }
inline float hardtanh_f(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
inline float leaky_relu_f(float x, float alpha) { return x > 0.0f ? x : x * alpha; }
inline float sigmoid_f(float x) { return 1.0f / (1.0f + smath::exp(-x)); }
inline float tanh_f(float x) { return smath::tanh(x); }
inline float silu_f(float x) { return sigmoid_f(x) * x; }
inline float hardsigmoid_f(float x) { return hardtanh_f(x + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f); }
inline float hardswish_f(float x) { return x * hardtanh_f(x + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f); }
// x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
inline float gelu_f(float x) { return ((smath::erf(x * 0.70710678118654752f) + 1.0f) * x) * 0.5f; }
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline float gelu_tanh_f(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return ((smath::tanh(inner) + 1.0f) * x) * 0.5f;
}
inline float elu_f(float x, float alpha) { return x > 0.0f ? x : smath::expm1(x < 0.0f ? x : 0.0f) * alpha; }
// log(1 + exp(beta x)) / beta, or x where beta x > threshold (log-add-exp form: no overflow)
inline float softplus_f(float x, float beta, float threshold) {
  const float z = x * beta;
  if (z > threshold) return x;
  float soft = (z > 0.0f ? z : 0.0f) + smath::log1p(smath::exp(-std::fabs(z)));
  if (beta != 1.0f) soft /= beta;
  return soft;
}

enum class ActKind {
  kNone, kRelu, kRelu6, kHardtanh, kLeakyRelu, kSigmoid, kTanh, kSilu, kHardswish, kHardsigmoid, kGelu, kGeluTanh,
};

struct Activation {
  ActKind kind = ActKind::kNone;
  float lo = 0.0f, hi = 0.0f;  // hardtanh bounds (relu6: 0, 6)
  float alpha = 0.0f;          // leaky_relu slope
};

// ActKind follows the catalogue's order of the `activation` values (ops::kFusedActivations, generated).
static_assert(sizeof(ops::kFusedActivations) / sizeof(ops::kFusedActivations[0]) ==
                  static_cast<size_t>(ActKind::kGeluTanh) + 1,
              "ActKind and the catalogue's fused activations (dtorch/catalogue FUSED_ACTIVATIONS) differ");

// Reads the fused `activation` attribute (and min_val/max_val/alpha where it uses them). The loader has held the
// value against the catalogue, so an unknown name here means a caller that skipped the loader (run_kernel).
inline Status parse_activation(const char* op, const Attrs& attrs, Activation* out) {
  const char* s = attrs.get_string("activation");
  constexpr int kCount = static_cast<int>(ActKind::kGeluTanh) + 1;
  int idx = 0;
  while (idx < kCount && std::strcmp(s, ops::kFusedActivations[idx]) != 0) ++idx;
  if (idx == kCount)
    return op_error(StatusCode::kUnsupported, op,
                    "unknown fused activation '%s' (expected none, relu, relu6, hardtanh, leaky_relu, sigmoid, "
                    "tanh, silu, hardswish, hardsigmoid, gelu or gelu_tanh)",
                    s);
  Activation a;
  a.kind = static_cast<ActKind>(idx);
  if (a.kind == ActKind::kRelu6) {  // relu6 = hardtanh(0, 6), computed as hardtanh
    a.kind = ActKind::kHardtanh;
    a.lo = 0.0f;
    a.hi = 6.0f;
  } else if (a.kind == ActKind::kHardtanh) {
    a.lo = static_cast<float>(attrs.get_float("min_val"));
    a.hi = static_cast<float>(attrs.get_float("max_val"));
  } else if (a.kind == ActKind::kLeakyRelu) {
    a.alpha = static_cast<float>(attrs.get_float("alpha"));
  }
  *out = a;
  return Status::Ok();
}

inline float apply_activation(const Activation& a, float x) {
  switch (a.kind) {
    case ActKind::kNone: return x;
    case ActKind::kRelu: return relu_f(x);
    case ActKind::kRelu6: return hardtanh_f(x, 0.0f, 6.0f);
    case ActKind::kHardtanh: return hardtanh_f(x, a.lo, a.hi);
    case ActKind::kLeakyRelu: return leaky_relu_f(x, a.alpha);
    case ActKind::kSigmoid: return sigmoid_f(x);
    case ActKind::kTanh: return tanh_f(x);
    case ActKind::kSilu: return silu_f(x);
    case ActKind::kHardswish: return hardswish_f(x);
    case ActKind::kHardsigmoid: return hardsigmoid_f(x);
    case ActKind::kGelu: return gelu_f(x);
    case ActKind::kGeluTanh: return gelu_tanh_f(x);
  }
  return x;
}

// The fused activation as the SIMD kernels apply it: a clamp in registers, x < lo ? lo : x where `low` (relu: 0,
// relu6: 0, hardtanh: its lower bound; else lo = -inf), then x > hi ? hi : x where `high` (relu6: 6, hardtanh: its
// upper bound; else hi = inf), or `other`: an activation that is not a clamp, applied to the stored values
// (bias_activation). None is neither. The infinite bounds change nothing, NaN included.
struct ClampBounds {
  bool low = false, high = false, other = false;
  float lo = -__builtin_inff(), hi = __builtin_inff();
  explicit ClampBounds(const Activation& a) {
    const bool relu = a.kind == ActKind::kRelu, relu6 = a.kind == ActKind::kRelu6, ht = a.kind == ActKind::kHardtanh;
    low = relu || relu6 || ht;
    high = relu6 || ht;
    if (low) lo = ht ? a.lo : 0.0f;
    if (high) hi = relu6 ? 6.0f : a.hi;
    other = !(low || a.kind == ActKind::kNone);
  }
};

// p[i] = act(p[i] + bias) for i in [0, n); the switch sits outside the loops so they vectorize.
inline void bias_activation(const Activation& a, float bias, float* p, int64_t n) {
  if (bias != 0.0f)
    for (int64_t i = 0; i < n; ++i) p[i] += bias;
  switch (a.kind) {
    case ActKind::kNone: return;
    case ActKind::kRelu:
      for (int64_t i = 0; i < n; ++i) p[i] = relu_f(p[i]);
      return;
    case ActKind::kRelu6:
    case ActKind::kHardtanh: {
      const float lo = a.kind == ActKind::kRelu6 ? 0.0f : a.lo, hi = a.kind == ActKind::kRelu6 ? 6.0f : a.hi;
      for (int64_t i = 0; i < n; ++i) p[i] = hardtanh_f(p[i], lo, hi);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) p[i] = apply_activation(a, p[i]);
      return;
  }
}

// p[i] = act(p[i] + bias[i]) for i in [0, n) (bias may be null).
inline void bias_vector_activation(const Activation& a, const float* bias, float* p, int64_t n) {
  if (bias != nullptr)
    for (int64_t i = 0; i < n; ++i) p[i] += bias[i];
  if (a.kind != ActKind::kNone) bias_activation(a, 0.0f, p, n);
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
