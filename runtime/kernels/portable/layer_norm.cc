// layer_norm: x, optional weight, optional bias -> normalize over the trailing `normalized_ndim` dims
// (biased variance), then weight and bias of the normalized shape (runtime/OPS.md). Attributes:
// normalized_ndim i (default 1), eps f (default 1e-5). Mean and variance are summed in double in order;
// each row is handled by one thread. The output may alias x.
#include <cmath>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "layer_norm";

Status check(const Attrs& attrs, const TensorView* in, int n_in, int64_t* rows, int64_t* d) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 3));
  const TensorView& x = in[0];
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", x, DType::kFloat32));
  const int64_t nd = attrs.get_int("normalized_ndim");
  if (nd < 1 || nd > x.shape.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "normalized_ndim %lld must be between 1 and the input's rank (input %s)", (long long)nd,
                    ::dtorch::shape_str(x.shape).c_str());
  Shape norm;
  norm.ndim = static_cast<int32_t>(nd);
  int64_t dd = 1;
  for (int i = 0; i < nd; ++i) {
    norm.dims[i] = x.shape.dims[x.shape.ndim - nd + i];
    dd *= norm.dims[i];
  }
  for (int k = 1; k < 3; ++k) {
    if (!kernels::optional_present(in, n_in, k)) continue;
    const char* what = k == 1 ? "weight" : "bias";
    DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, what, in[k], DType::kFloat32));
    if (in[k].shape.numel() != dd)
      return op_error(StatusCode::kInvalidArgument, kOp, "%s has shape %s but the normalized shape is %s", what,
                      ::dtorch::shape_str(in[k].shape).c_str(), ::dtorch::shape_str(norm).c_str());
  }
  *d = dd;
  *rows = dd > 0 ? x.shape.numel() / dd : 0;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t rows = 0, d = 0;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, &rows, &d));
  out[0] = in[0].shape;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t rows = 0, d = 0;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, &rows, &d));
  const double eps = ctx.attrs->get_float("eps");
  const float* x = in[0].as<const float>();
  const float* w = kernels::optional_present(in, n_in, 1) ? in[1].as<const float>() : nullptr;
  const float* b = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * d;
      float* yr = y + r * d;
      double sum = 0.0;
      for (int64_t i = 0; i < d; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(d);
      double sq = 0.0;
      for (int64_t i = 0; i < d; ++i) {
        const double t = xr[i] - mean;
        sq += t * t;
      }
      const float invstd = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
      const float m = static_cast<float>(mean);
      for (int64_t i = 0; i < d; ++i) {
        float v = (xr[i] - m) * invstd;
        if (w != nullptr) v *= w[i];
        if (b != nullptr) v += b[i];
        yr[i] = v;
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(layer_norm, DType::kFloat32, infer, run);
}  // namespace dtorch
