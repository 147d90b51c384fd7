// Shared by softmax and log_softmax: the argument checks, the (outer, len, inner) view of the input
// around `dim`, and the row loop that finds each row's maximum (a row of -inf uses 0; NaN propagates).
// Each row is handled by one thread, so results do not depend on the thread count.
#pragma once

#include <cmath>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct SoftmaxRows {
  int64_t outer = 1, len = 1, inner = 1;
};

inline Status softmax_check(const char* op, const Attrs& attrs, const TensorView* in, int n_in, SoftmaxRows* rows) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  const Shape& s = in[0].shape;
  int dim = 0;
  DTORCH_RETURN_IF_ERROR(normalize_axis(op, "dim", attrs.get_int("dim"), s.ndim, &dim));
  rows->outer = 1;
  rows->inner = 1;
  rows->len = s.ndim > 0 ? s.dims[dim] : 1;
  for (int i = 0; i < dim && i < s.ndim; ++i) rows->outer *= s.dims[i];
  for (int i = dim + 1; i < s.ndim; ++i) rows->inner *= s.dims[i];
  return Status::Ok();
}

inline Status softmax_infer(const char* op, const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                            size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  SoftmaxRows rows;
  DTORCH_RETURN_IF_ERROR(softmax_check(op, attrs, in, n_in, &rows));
  out[0] = in[0].shape;
  *scratch_bytes = 0;
  return Status::Ok();
}

// Calls row_fn(x, y, base, stride, len, max) for every row; the caller's function does the row's math.
template <typename RowFn>
Status softmax_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                   int n_out, RowFn row_fn) {
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  SoftmaxRows rows;
  DTORCH_RETURN_IF_ERROR(softmax_check(op, *ctx.attrs, in, n_in, &rows));
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  const int64_t len = rows.len, inner = rows.inner;
  parallel_chunks(ctx.pool, rows.outer * inner, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = (r / inner) * len * inner + r % inner;
      float m = -INFINITY;
      for (int64_t k = 0; k < len; ++k) {
        const float v = x[base + k * inner];
        if (v > m || std::isnan(v)) m = v;
      }
      if (!std::isfinite(m) && !std::isnan(m)) m = 0.0f;
      row_fn(x, y, base, inner, len, m);
    }
  });
  return Status::Ok();
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
