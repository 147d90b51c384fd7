// prelu: x for x > 0, w[c] * x otherwise, c the index along dim 1 (PyTorch's F.prelu); w has C elements, or one
// slope for every channel. Elementwise, same shape; the output may alias x (in place). Schema: dtorch/catalogue.
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "prelu";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", in[1], DType::kFloat32));
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  const int64_t channels = x.ndim >= 2 ? x.dims[1] : 1;
  if (x.ndim < 1)
    return kernels::op_error(StatusCode::kInvalidArgument, kOp, "input must have at least 1 dimension, got shape %s",
                             shape_str(x).c_str());
  if (w.ndim != 1 || (w.dims[0] != 1 && w.dims[0] != channels))
    return kernels::op_error(StatusCode::kInvalidArgument, kOp,
                             "weight must have shape [1] or [%lld] (the input's channels), got %s",
                             static_cast<long long>(channels), shape_str(w).c_str());
  out[0] = x;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape expect;
  size_t scratch = 0;
  DTORCH_RETURN_IF_ERROR(infer(*ctx.attrs, in, n_in, &expect, n_out, &scratch));
  const Shape& s = in[0].shape;
  const int64_t channels = s.ndim >= 2 ? s.dims[1] : 1;
  int64_t inner = 1;
  for (int d = 2; d < s.ndim; ++d) inner *= s.dims[d];
  const bool shared = in[1].shape.dims[0] == 1;
  const float* x = in[0].as<const float>();
  const float* w = in[1].as<const float>();
  float* y = out[0].as<float>();
  const int64_t rows = s.ndim >= 2 ? s.dims[0] * channels : 1;  // one (n, c) plane per row
  const int64_t len = s.ndim >= 2 ? inner : s.dims[0];
  kernels::parallel_chunks(ctx.pool, rows, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float a = w[shared ? 0 : r % channels];
      const float* xr = x + r * len;
      float* yr = y + r * len;
      for (int64_t i = 0; i < len; ++i) yr[i] = xr[i] > 0.0f ? xr[i] : a * xr[i];
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(prelu, DType::kFloat32, infer, run);
}  // namespace dtorch
