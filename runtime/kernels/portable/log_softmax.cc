// log_softmax: x - max - log(sum(exp(x - max))) along dim (runtime/OPS.md). Attribute: dim i (normalized, >= 0; a negative
// dim is accepted and normalized). The row maximum is subtracted first (a row of -inf uses 0); the sum
// is in double, in order; each row is handled by one thread. The output may alias x.
#include <cmath>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "log_softmax";

Status check(const Attrs& attrs, const TensorView* in, int n_in, int64_t* outer, int64_t* len, int64_t* inner) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  const Shape& s = in[0].shape;
  int dim = 0;
  DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "dim", attrs.get_int("dim", -1), s.ndim, &dim));
  *outer = 1;
  *inner = 1;
  *len = s.ndim > 0 ? s.dims[dim] : 1;
  for (int i = 0; i < dim && i < s.ndim; ++i) *outer *= s.dims[i];
  for (int i = dim + 1; i < s.ndim; ++i) *inner *= s.dims[i];
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t o = 0, l = 0, i = 0;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, &o, &l, &i));
  out[0] = in[0].shape;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t outer = 0, len = 0, inner = 0;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, &outer, &len, &inner));
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, outer * inner, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = (r / inner) * len * inner + r % inner;
      float m = -INFINITY;
      for (int64_t k = 0; k < len; ++k) {
        const float v = x[base + k * inner];
        if (v > m || std::isnan(v)) m = v;
      }
      if (!std::isfinite(m) && !std::isnan(m)) m = 0.0f;
      double sum = 0.0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[base + k * inner] - m);
      const float lse = static_cast<float>(std::log(sum));
      for (int64_t k = 0; k < len; ++k) y[base + k * inner] = (x[base + k * inner] - m) - lse;
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL("log_softmax", DType::kFloat32, infer, run, 1, 1, 0, 1);
}  // namespace dtorch
