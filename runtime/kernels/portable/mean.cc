// mean: x -> the mean over `axes` (sum in double, divided once) (runtime/OPS.md). Attributes: axes is[] (absent = all), keepdim i.
// Scratch: one double per output element (the accumulators).
#include "kernels/common/reduce.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "mean";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  kernels::ReducePlan p;
  DTORCH_RETURN_IF_ERROR(kernels::reduce_plan(kOp, attrs, in, n_in, n_out, &p));
  out[0] = p.out;
  *scratch_bytes = static_cast<size_t>(p.out.numel()) * sizeof(double);
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::ReducePlan p;
  DTORCH_RETURN_IF_ERROR(kernels::reduce_plan(kOp, *ctx.attrs, in, n_in, n_out, &p));
  const int64_t n = p.out.numel();
  if (ctx.scratch_bytes < static_cast<size_t>(n) * sizeof(double))
    return kernels::op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                             ctx.scratch_bytes, static_cast<size_t>(n) * sizeof(double));
  double* acc = static_cast<double*>(ctx.scratch);
  kernels::reduce_sum(p, in[0].shape, in[0].as<const float>(), acc, n);
  float* y = out[0].as<float>();
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(acc[i] / static_cast<double>(p.count));
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(mean, DType::kFloat32, infer, run);
}  // namespace dtorch
