// batch_norm (inference form): x (N, C, *), mean (C), var (C), optional weight (C), optional bias (C)
// -> y = (x - mean) / sqrt(var + eps) * weight + bias per channel (runtime/OPS.md). Attribute: eps f
// (default 1e-5). As in eager mode: scale = weight / sqrt(var + eps), shift = bias - mean * scale (float32),
// y = x * scale + shift. The output may alias x.
#include <cmath>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "batch_norm";

Status check(const TensorView* in, int n_in) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 3, 5));
  const TensorView& x = in[0];
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", x, DType::kFloat32));
  if (x.shape.ndim < 2)
    return op_error(StatusCode::kInvalidArgument, kOp, "input must have at least 2 dimensions (N, C, ...), got %s",
                    ::dtorch::shape_str(x.shape).c_str());
  const int64_t c = x.shape.dims[1];
  DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "running mean", in[1], c));
  DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "running var", in[2], c));
  if (kernels::optional_present(in, n_in, 3)) DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "weight", in[3], c));
  if (kernels::optional_present(in, n_in, 4)) DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[4], c));
  return Status::Ok();
}

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check(in, n_in));
  out[0] = in[0].shape;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check(in, n_in));
  const float eps = static_cast<float>(ctx.attrs->get_float("eps"));
  const int64_t n = in[0].shape.dims[0], c = in[0].shape.dims[1];
  const int64_t inner = c > 0 && n > 0 ? in[0].shape.numel() / (n * c) : 0;
  const float* x = in[0].as<const float>();
  const float* mean = in[1].as<const float>();
  const float* var = in[2].as<const float>();
  const float* w = kernels::optional_present(in, n_in, 3) ? in[3].as<const float>() : nullptr;
  const float* b = kernels::optional_present(in, n_in, 4) ? in[4].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, n * c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t ch = p % c;
      const float invstd = 1.0f / std::sqrt(var[ch] + eps);
      const float scale = w != nullptr ? w[ch] * invstd : invstd;
      float shift = -mean[ch] * scale;
      if (b != nullptr) shift += b[ch];
      const float* xp = x + p * inner;
      float* yp = y + p * inner;
      for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * scale + shift;
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(batch_norm, DType::kFloat32, infer, run);
}  // namespace dtorch
