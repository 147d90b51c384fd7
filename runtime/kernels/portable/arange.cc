// arange: y[i] = start + i * step for i in [0, n) (runtime/OPS.md). n is the attribute shape[0], or the dimension
// like_dims[0] of the optional input `like` at run time (ONNX Range / torch.arange whose length follows a dynamic
// dimension). The scalar input `start` gives the first value and the dtype (float32, int64, int32); integer dtypes
// need a whole-number step and compute exactly (wrapping around, like the integer arithmetic kernels); float32
// computes start + i * step in double and rounds once.
#include <cmath>

#include "kernels/common/like.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "arange";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Shape* out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(arange), attrs, in, n_in, outs, n_out));
  if (in[0].shape.numel() != 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "start must be a scalar, got shape %s",
                    ::dtorch::shape_str(in[0].shape).c_str());
  int64_t spec[kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "shape", kMaxDims, spec, &n, true));
  if (n != 1) return op_error(StatusCode::kInvalidModel, kOp, "shape must have one entry, got %d", n);
  DTORCH_RETURN_IF_ERROR(kernels::apply_like_dims(kOp, attrs, in, n_in, spec, n));
  if (spec[0] < 0) return op_error(StatusCode::kInvalidArgument, kOp, "length %lld is negative", (long long)spec[0]);
  const double step = attrs.get_float("step");
  if (in[0].dtype != DType::kFloat32 && (step != std::floor(step) || std::fabs(step) > 9.0e18))
    return op_error(StatusCode::kInvalidModel, kOp, "step %g must be a whole number for %s", step,
                    dtype_name(in[0].dtype));
  out->ndim = 1;
  out->dims[0] = spec[0];
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return plan(attrs, in, n_in, nullptr, n_out, &out[0]);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &o));
  const double step = ctx.attrs->get_float("step");
  const int64_t n = o.dims[0];
  if (in[0].dtype == DType::kFloat32) {
    const double start = in[0].as<const float>()[0];
    float* y = out[0].as<float>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(start + static_cast<double>(i) * step);
    return Status::Ok();
  }
  const auto fill = [&](auto tag) {
    using T = decltype(tag);
    const T start = in[0].as<const T>()[0], st = static_cast<T>(static_cast<int64_t>(step));
    T* y = out[0].as<T>();
    T v = start;
    for (int64_t i = 0; i < n; ++i, v = kernels::wrap_add(v, st)) y[i] = v;
    return Status::Ok();
  };
  if (in[0].dtype == DType::kInt64) return fill(int64_t{});
  if (in[0].dtype == DType::kInt32) return fill(int32_t{});
  return op_error(StatusCode::kInternal, kOp, "no loop for %s", dtype_name(in[0].dtype));
}

}  // namespace
DTORCH_REGISTER_KERNEL(arange, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(arange, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(arange, DType::kInt32, infer, run);
}  // namespace dtorch
