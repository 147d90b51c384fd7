// group_norm: x (N, C, *), optional weight (C), optional bias (C) -> normalize each group of C/groups
// channels (and all positions) per sample, then per-channel weight and bias (runtime/OPS.md). Attributes:
// groups i, eps f (default 1e-5). Statistics are summed in double in order; each (sample, group) is
// handled by one thread. The output may alias x.
#include <cmath>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "group_norm";

Status check(const Attrs& attrs, const TensorView* in, int n_in, int64_t* groups) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 3));
  const TensorView& x = in[0];
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", x, DType::kFloat32));
  if (x.shape.ndim < 2)
    return op_error(StatusCode::kInvalidArgument, kOp, "input must have at least 2 dimensions (N, C, ...), got %s",
                    ::dtorch::shape_str(x.shape).c_str());
  const int64_t c = x.shape.dims[1];
  const int64_t g = attrs.get_int("groups");
  if (g < 1) return op_error(StatusCode::kInvalidModel, kOp, "attribute 'groups' must be >= 1, got %lld", (long long)g);
  if (c % g != 0)
    return op_error(StatusCode::kInvalidArgument, kOp, "input has %lld channels, which groups=%lld does not divide",
                    (long long)c, (long long)g);
  if (kernels::optional_present(in, n_in, 1)) DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "weight", in[1], c));
  if (kernels::optional_present(in, n_in, 2)) DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[2], c));
  *groups = g;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t g = 0;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, &g));
  out[0] = in[0].shape;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t groups = 0;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, &groups));
  const double eps = ctx.attrs->get_float("eps");
  const int64_t n = in[0].shape.dims[0], c = in[0].shape.dims[1];
  const int64_t inner = n * c > 0 ? in[0].shape.numel() / (n * c) : 0;
  const int64_t cg = c / groups, len = cg * inner;
  const float* x = in[0].as<const float>();
  const float* w = kernels::optional_present(in, n_in, 1) ? in[1].as<const float>() : nullptr;
  const float* b = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, n * groups, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const float* xs = x + u * len;
      float* ys = y + u * len;
      double sum = 0.0;
      for (int64_t i = 0; i < len; ++i) sum += xs[i];
      const double mean = len > 0 ? sum / static_cast<double>(len) : 0.0;
      double sq = 0.0;
      for (int64_t i = 0; i < len; ++i) {
        const double t = xs[i] - mean;
        sq += t * t;
      }
      const float invstd = static_cast<float>(1.0 / std::sqrt((len > 0 ? sq / static_cast<double>(len) : 0.0) + eps));
      const float m = static_cast<float>(mean);
      const int64_t c0 = (u % groups) * cg;
      for (int64_t k = 0; k < cg; ++k) {
        const float wk = w != nullptr ? w[c0 + k] : 1.0f, bk = b != nullptr ? b[c0 + k] : 0.0f;
        const float* xc = xs + k * inner;
        float* yc = ys + k * inner;
        for (int64_t i = 0; i < inner; ++i) yc[i] = (xc[i] - m) * invstd * wk + bk;
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(group_norm, DType::kFloat32, infer, run);
}  // namespace dtorch
