// qadd's parameters (runtime/OPS.md): the checks of its inputs and attributes, and TFLite's int8 ADD multipliers
// (kernels/portable/qadd.cc is the specification; every set's qadd reads them here). With s = 2 * max(a_scale,
// b_scale), each input's (q - zero_point) is shifted left kLeftShift bits and multiplied by its_scale / s (<= 1/2),
// the two are added, and the sum is multiplied by s / (2^kLeftShift * y_scale).
#pragma once

#include <stdint.h>

#include "kernels/common/broadcast.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace qadd {

constexpr char kOp[] = "qadd";
constexpr int kLeftShift = 20;

struct Params {
  double a_scale, b_scale, y_scale;
  int32_t a_zp, b_zp, y_zp, lo, hi;
  requant::Multiplier ma, mb, my;
};

inline Status check(const Attrs& attrs, const TensorView* in, int n_in, int n_out, Shape* out, Params* p) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check_dtype(kOp, "a", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(check_dtype(kOp, "b", in[1], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(broadcast_shape(kOp, in[0].shape, in[1].shape, out));
  DTORCH_RETURN_IF_ERROR(read_scale(kOp, attrs, "a_scale", &p->a_scale));
  DTORCH_RETURN_IF_ERROR(read_scale(kOp, attrs, "b_scale", &p->b_scale));
  DTORCH_RETURN_IF_ERROR(read_scale(kOp, attrs, "y_scale", &p->y_scale));
  p->a_zp = static_cast<int32_t>(attrs.get_int("a_zero_point"));
  p->b_zp = static_cast<int32_t>(attrs.get_int("b_zero_point"));
  p->y_zp = static_cast<int32_t>(attrs.get_int("y_zero_point"));
  DTORCH_RETURN_IF_ERROR(read_output_clamp(kOp, attrs, "add", p->y_scale, p->y_zp, &p->lo, &p->hi));
  const double twice = 2.0 * (p->a_scale > p->b_scale ? p->a_scale : p->b_scale);
  const double out_real = twice / (static_cast<double>(1 << kLeftShift) * p->y_scale);
  if (!requant::multiplier_ok(out_real))
    return op_error(StatusCode::kInvalidModel, kOp, "2 * max(a_scale, b_scale) / (2^20 * y_scale) = %g is too large "
                    "for a requantization multiplier (< 2^30)", out_real);
  p->ma = requant::make_multiplier(p->a_scale / twice);
  p->mb = requant::make_multiplier(p->b_scale / twice);
  p->my = requant::make_multiplier(out_real);
  return Status::Ok();
}

// A kernel's run: check's checks and multipliers, and out[0] the int8 tensor of the shape check gives.
inline Status check_run(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* out, int n_out,
                        Params* p) {
  Shape want;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, n_out, &want, p));
  if (out[0].shape != want || out[0].dtype != DType::kInt8)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(want).c_str());
  return Status::Ok();
}

}  // namespace qadd
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
