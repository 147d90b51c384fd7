// qmul: int8 a * int8 b with NumPy broadcasting -> int8 (runtime/OPS.md). Attributes: a_scale, a_zero_point, b_scale,
// b_zero_point, y_scale, y_zero_point, activation none / relu / relu6 (the output's clamp).
//
// TFLite's int8 MUL, integer only (kernels/common/requant.h): the product (a - a_zero_point) * (b - b_zero_point) is an
// exact int32 (|each factor| <= 255), multiplied once by the fixed-point a_scale * b_scale / y_scale, the output zero
// point added and the result clamped (TFLite rounds twice in MultiplyByQuantizedMultiplier; DTorch once, as every int8
// kernel here).
#include <cstdint>

#include "kernels/common/broadcast.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace rq = kernels::requant;
constexpr const char* kOp = "qmul";

Status check(const Attrs& attrs, const TensorView* in, int n_in, int n_out, Shape* out, kernels::QuantPair* q) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "a", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "b", in[1], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::broadcast_shape(kOp, in[0].shape, in[1].shape, out));
  return kernels::read_quant_pair(kOp, attrs, "mul", q);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  kernels::QuantPair q{};
  return check(attrs, in, n_in, n_out, out, &q);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::QuantPair q{};
  Shape want;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, n_out, &want, &q));
  if (out[0].shape != want || out[0].dtype != DType::kInt8)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(want).c_str());
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  const Shape* shapes[2] = {&in[0].shape, &in[1].shape};
  kernels::broadcast_apply<2>(ctx.pool, shapes, want, out[0].as<int8_t>(), [&](const int64_t* idx) {
    const int32_t prod = (a[idx[0]] - q.a_zero_point) * (b[idx[1]] - q.b_zero_point);
    return rq::requantize(prod, q.mul, q.y_zero_point, q.lo, q.hi);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qmul, DType::kInt8, infer, run);
}  // namespace dtorch
