// qadd: int8 a + int8 b with NumPy broadcasting -> int8 (runtime/OPS.md). Attributes: a_scale, a_zero_point, b_scale,
// b_zero_point, y_scale, y_zero_point, activation none / relu / relu6 (the output's clamp).
//
// TFLite's int8 ADD, integer only (kernels/common/requant.h; the multipliers: kernels/common/qadd_params.h): with
// s = 2 * max(a_scale, b_scale), each input's (q - zero_point) is shifted left 20 bits and multiplied by its_scale / s
// (<= 1/2), the two are added, and the sum is multiplied by s / (2^20 * y_scale), the output zero point added and the
// result clamped. Every step is an int32 value (|q - zp| <= 255, so the shifted inputs stay below 2^28).
#include <cstdint>

#include "kernels/common/broadcast.h"
#include "kernels/common/qadd_params.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace {

namespace rq = kernels::requant;
using kernels::qadd::kLeftShift;
using kernels::qadd::kOp;
using kernels::qadd::Params;
using kernels::qadd::check;
using kernels::qadd::check_run;

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  Params p{};
  return check(attrs, in, n_in, n_out, out, &p);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Params p{};
  DTORCH_RETURN_IF_ERROR(check_run(*ctx.attrs, in, n_in, out, n_out, &p));
  const Shape& want = out[0].shape;
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  const Shape* shapes[2] = {&in[0].shape, &in[1].shape};
  kernels::broadcast_apply<2>(ctx.pool, shapes, want, out[0].as<int8_t>(), [&](const int64_t* idx) {
    const int32_t sa = rq::apply((a[idx[0]] - p.a_zp) * (1 << kLeftShift), p.ma);
    const int32_t sb = rq::apply((b[idx[1]] - p.b_zp) * (1 << kLeftShift), p.mb);
    return rq::requantize(sa + sb, p.my, p.y_zp, p.lo, p.hi);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qadd, DType::kInt8, infer, run);
}  // namespace dtorch
