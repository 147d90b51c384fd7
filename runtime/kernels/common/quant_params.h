// The quantization attributes of the int8 operators (dtorch/catalogue/quant.py), read and checked once per run: a
// tensor's scale and zero point, a product's input and output parameters with its fused clamp, and each output
// channel's requantization multiplier from its weight scale.
#pragma once

#include <stdint.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// A scale attribute: finite and > 0 (the catalogue bounds it to [0, 1e30]; 0 is refused here).
inline Status read_scale(const char* op, const Attrs& attrs, const char* name, double* out) {
  const double s = attrs.get_float(name);
  if (!(s > 0.0) || s > 1e30)
    return op_error(StatusCode::kInvalidModel, op, "%s must be a finite number > 0, got %g", name, s);
  *out = s;
  return Status::Ok();
}

// An int8 tensor's quantization (quantize, dequantize).
struct QuantParams {
  double scale;
  float scale_f;  // the scale as float32: quantize divides by it, dequantize multiplies
  int32_t zero_point;
};

inline Status read_quant_params(const char* op, const Attrs& attrs, QuantParams* q) {
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "scale", &q->scale));
  q->scale_f = static_cast<float>(q->scale);
  q->zero_point = static_cast<int32_t>(attrs.get_int("zero_point"));
  return Status::Ok();
}

// quantize and dequantize: elementwise between float32 and int8 with the node's scale and zero point, same shape.
inline Status quant_unary_check(const OpSchema& schema, const Attrs& attrs, const TensorView* in, int n_in,
                                const TensorView* out, int n_out, QuantParams* q) {
  DTORCH_RETURN_IF_ERROR(check_signature(schema, attrs, in, n_in, out, n_out));
  return read_quant_params(schema.name, attrs, q);
}

inline Status quant_unary_infer(const OpSchema& schema, const Attrs& attrs, const TensorView* in, int n_in, Shape* out,
                                int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  QuantParams q{};
  DTORCH_RETURN_IF_ERROR(quant_unary_check(schema, attrs, in, n_in, nullptr, n_out, &q));
  out[0] = in[0].shape;
  return Status::Ok();
}

// y[i] = f(x[i], q) for In x and Out y.
template <typename In, typename Out, typename F>
inline Status quant_unary_run(const OpSchema& schema, const KernelContext& ctx, const TensorView* in, int n_in,
                              TensorView* out, int n_out, F f) {
  QuantParams q{};
  DTORCH_RETURN_IF_ERROR(quant_unary_check(schema, *ctx.attrs, in, n_in, out, n_out, &q));
  if (out[0].shape != in[0].shape)
    return op_error(StatusCode::kInternal, schema.name, "output has shape %s, expected %s",
                    shape_str(out[0].shape).c_str(), shape_str(in[0].shape).c_str());
  const In* x = in[0].as<const In>();
  Out* y = out[0].as<Out>();
  parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i], q);
  });
  return Status::Ok();
}

// The int8 clamp [lo, hi] of the node's fused `activation` (none, relu, relu6) on an output of y_scale and
// y_zero_point; `what` names the node in the refusal of any other activation ("product", "add").
inline Status read_output_clamp(const char* op, const Attrs& attrs, const char* what, double y_scale,
                                int32_t y_zero_point, int32_t* lo, int32_t* hi) {
  const char* act = attrs.get_string("activation");
  int kind = 0;
  if (act != nullptr && act[0] != '\0' && strcmp(act, "none") != 0) {
    if (strcmp(act, "relu") == 0)
      kind = 1;
    else if (strcmp(act, "relu6") == 0)
      kind = 2;
    else
      return op_error(StatusCode::kInvalidModel, op, "activation '%s' cannot be fused into an int8 %s", act, what);
  }
  requant::activation_range(kind, static_cast<float>(y_scale), y_zero_point, lo, hi);
  return Status::Ok();
}

// A product's input and output quantization and the int8 range its fused activation clamps to.
struct QuantIO {
  double x_scale, y_scale;
  int32_t x_zero_point, y_zero_point;
  int32_t lo, hi;  // the output clamp
};

inline Status read_quant_io(const char* op, const Attrs& attrs, QuantIO* q) {
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "x_scale", &q->x_scale));
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "y_scale", &q->y_scale));
  q->x_zero_point = static_cast<int32_t>(attrs.get_int("x_zero_point"));
  q->y_zero_point = static_cast<int32_t>(attrs.get_int("y_zero_point"));
  return read_output_clamp(op, attrs, "product", q->y_scale, q->y_zero_point, &q->lo, &q->hi);
}

// Checks the per-channel weight scales (w_scale, n float32 values: finite, >= 0) and that each channel's
// multiplier x_scale * w_scale[o] / y_scale stays below 2^30. The values are checked once they are there (infer may
// see a view without data: w_scale computed by an earlier node; run always checks).
inline Status check_weight_scales(const char* op, const QuantIO& io, const TensorView& w_scale, int64_t n) {
  DTORCH_RETURN_IF_ERROR(check_vector(op, "w_scale", w_scale, n));
  if (w_scale.data == nullptr) return Status::Ok();
  const float* s = w_scale.as<const float>();
  for (int64_t o = 0; o < n; ++o) {
    const double v = s[o];
    if (!(v >= 0.0) || v > 1e30)
      return op_error(StatusCode::kInvalidModel, op, "w_scale[%lld] must be a finite number >= 0, got %g",
                      (long long)o, v);
    if (!requant::multiplier_ok(io.x_scale * v / io.y_scale))
      return op_error(StatusCode::kInvalidModel, op,
                      "x_scale * w_scale[%lld] / y_scale = %g is too large for a requantization multiplier (< 2^30)",
                      (long long)o, io.x_scale * v / io.y_scale);
  }
  return Status::Ok();
}

// The quantization of an int8 product of two activations (qmul, qmatmul): a's and b's scale and zero point, the
// output's with its fused clamp, and the one multiplier a_scale * b_scale / y_scale (double, two correctly rounded
// operations) that takes the int32 (a - a_zero_point) * (b - b_zero_point) sums to the output.
struct QuantPair {
  double a_scale, b_scale, y_scale;
  int32_t a_zero_point, b_zero_point, y_zero_point;
  int32_t lo, hi;  // the output clamp
  requant::Multiplier mul;
};

inline Status read_quant_pair(const char* op, const Attrs& attrs, const char* what, QuantPair* q) {
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "a_scale", &q->a_scale));
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "b_scale", &q->b_scale));
  DTORCH_RETURN_IF_ERROR(read_scale(op, attrs, "y_scale", &q->y_scale));
  q->a_zero_point = static_cast<int32_t>(attrs.get_int("a_zero_point"));
  q->b_zero_point = static_cast<int32_t>(attrs.get_int("b_zero_point"));
  q->y_zero_point = static_cast<int32_t>(attrs.get_int("y_zero_point"));
  DTORCH_RETURN_IF_ERROR(read_output_clamp(op, attrs, what, q->y_scale, q->y_zero_point, &q->lo, &q->hi));
  const double real = q->a_scale * q->b_scale / q->y_scale;
  if (!requant::multiplier_ok(real))
    return op_error(StatusCode::kInvalidModel, op,
                    "a_scale * b_scale / y_scale = %g is too large for a requantization multiplier (< 2^30)", real);
  q->mul = requant::make_multiplier(real);
  return Status::Ok();
}

// Output channel o's multiplier: x_scale * w_scale[o] / y_scale in double (two correctly rounded operations).
inline requant::Multiplier channel_multiplier(const QuantIO& io, const float* w_scale, int64_t o) {
  return requant::make_multiplier(io.x_scale * static_cast<double>(w_scale[o]) / io.y_scale);
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
