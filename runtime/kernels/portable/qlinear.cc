// qlinear: int8 x (..., K), int8 w (M, K), float32 w_scale (M), optional int32 bias (M) -> int8 (..., M)
// (runtime/OPS.md). Attributes: x_scale, x_zero_point, y_scale, y_zero_point; activation none / relu / relu6.
//
// y[r, m] starts at bias[m] and adds (x[r, k] - x_zero_point) * w[m, k] over k in int32, wrapping modulo 2^32 (as
// qconv2d; integer sums do not depend on their order), then kernels/common/requant.h with feature m's multiplier
// x_scale * w_scale[m] / y_scale. Threads split (row, feature) units: the bits do not depend on the count.
#include <cstdint>

#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qlinear";

struct Geo {
  int64_t rows, k, m;
};

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, Geo* g, kernels::QuantIO* io) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 3, 4));
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", x, DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", w, DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, io));
  if (x.shape.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "input must have at least one dimension (..., K), got a scalar");
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "weight (M, K)", w, 2));
  g->k = x.shape.dims[x.shape.ndim - 1];
  g->m = w.shape.dims[0];
  if (w.shape.dims[1] != g->k)
    return op_error(StatusCode::kInvalidArgument, kOp, "input %s has %lld features but the weight %s expects %lld",
                    ::dtorch::shape_str(x.shape).c_str(), (long long)g->k, ::dtorch::shape_str(w.shape).c_str(),
                    (long long)w.shape.dims[1]);
  g->rows = 1;
  for (int d = 0; d + 1 < x.shape.ndim; ++d) g->rows *= x.shape.dims[d];
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, *io, in[2], g->m));
  if (kernels::optional_present(in, n_in, 3))
    DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[3], g->m, DType::kInt32));
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, &g, &io));
  out[0] = in[0].shape;
  out[0].dims[out[0].ndim - 1] = g.m;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g, &io));
  Shape want = in[0].shape;
  want.dims[want.ndim - 1] = g.m;
  if (out[0].dtype != DType::kInt8 || out[0].shape != want)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(want).c_str());
  const int8_t* x = in[0].as<const int8_t>();
  const int8_t* w = in[1].as<const int8_t>();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  int8_t* y = out[0].as<int8_t>();
  const int32_t zp = io.x_zero_point;
  // Units are features of all rows (m outer): one multiplier per unit run, the weight row read from cache.
  kernels::parallel_chunks(ctx.pool, g.m * g.rows, 16, [&](int64_t b, int64_t e) {
    int64_t cached = -1;
    kernels::requant::Multiplier mul;
    for (int64_t u = b; u < e; ++u) {
      const int64_t m = u / g.rows, r = u % g.rows;
      if (m != cached) {
        mul = kernels::channel_multiplier(io, ws, m);
        cached = m;
      }
      const int8_t* xr = x + r * g.k;
      const int8_t* wm = w + m * g.k;
      uint32_t acc = bias != nullptr ? static_cast<uint32_t>(bias[m]) : 0u;
      for (int64_t k = 0; k < g.k; ++k) acc += static_cast<uint32_t>((xr[k] - zp) * wm[k]);
      y[r * g.m + m] = kernels::requant::requantize(static_cast<int32_t>(acc), mul, io.y_zero_point, io.lo, io.hi);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qlinear, DType::kInt8, infer, run);
}  // namespace dtorch
