// qmean: int8 x -> int8 mean over `axes` (runtime/OPS.md). Attributes: axes is[] (absent = all), keepdim i, x_scale,
// x_zero_point, y_scale, y_zero_point. Each output's int32 sum of (x - x_zero_point) over its `count` inputs is
// requantized (kernels/common/requant.h) with the multiplier x_scale / (y_scale * count), computed in double: the
// division by the count is part of the one rounding. count is at most 2^23, so the sum is exact. Scratch: one int32
// per output element.
#include <cstdint>

#include "kernels/common/quant_params.h"
#include "kernels/common/reduce.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qmean";
constexpr int64_t kMaxCount = int64_t{1} << 23;  // dtorch/catalogue/quant.py QMEAN_MAX_COUNT

struct Params {
  kernels::ReducePlan plan;
  double x_scale, y_scale;
  int32_t x_zp, y_zp;
};

Status check(const Attrs& attrs, const TensorView* in, int n_in, int n_out, Params* p) {
  DTORCH_RETURN_IF_ERROR(kernels::reduce_plan(kOp, attrs, in, n_in, n_out, &p->plan));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, attrs, "x_scale", &p->x_scale));
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, attrs, "y_scale", &p->y_scale));
  p->x_zp = static_cast<int32_t>(attrs.get_int("x_zero_point"));
  p->y_zp = static_cast<int32_t>(attrs.get_int("y_zero_point"));
  if (p->plan.count > kMaxCount)
    return op_error(StatusCode::kInvalidArgument, kOp, "each output averages %lld values, more than the 2^23 an int32 "
                    "sum holds exactly", (long long)p->plan.count);
  const double real = p->plan.count == 0 ? 0.0 : p->x_scale / (p->y_scale * static_cast<double>(p->plan.count));
  if (!kernels::requant::multiplier_ok(real))
    return op_error(StatusCode::kInvalidModel, kOp, "x_scale / (y_scale * count) = %g is too large for a "
                    "requantization multiplier (< 2^30)", real);
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  Params p;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, n_out, &p));
  out[0] = p.plan.out;
  *scratch_bytes = static_cast<size_t>(p.plan.out.numel()) * sizeof(int32_t);
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Params p;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, n_out, &p));
  const int64_t n = p.plan.out.numel();
  if (ctx.scratch_bytes < static_cast<size_t>(n) * sizeof(int32_t))
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, static_cast<size_t>(n) * sizeof(int32_t));
  int32_t* acc = static_cast<int32_t*>(ctx.scratch);
  for (int64_t i = 0; i < n; ++i) acc[i] = 0;
  const int8_t* x = in[0].as<const int8_t>();
  if (kernels::reduce_is_trailing(p.plan, in[0].shape)) {  // a global pool: each output sums a contiguous run
    const int64_t m = p.plan.count;
    kernels::parallel_chunks(ctx.pool, n, 16, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int32_t s = 0;
        for (int64_t i = 0; i < m; ++i) s += x[o * m + i];
        acc[o] = s - static_cast<int32_t>(m) * p.x_zp;
      }
    });
  } else {
    kernels::reduce_walk(p.plan, in[0].shape, [&](int64_t o, int64_t i) { acc[o] += x[i] - p.x_zp; });
  }
  const double real = p.plan.count == 0 ? 0.0 : p.x_scale / (p.y_scale * static_cast<double>(p.plan.count));
  const kernels::requant::Multiplier mul = kernels::requant::make_multiplier(real);
  int8_t* y = out[0].as<int8_t>();
  for (int64_t i = 0; i < n; ++i)
    y[i] = kernels::requant::requantize(acc[i], mul, p.y_zp, kernels::requant::kQMin, kernels::requant::kQMax);
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qmean, DType::kInt8, infer, run);
}  // namespace dtorch
