// avg_pool2d: x (N, C, H, W) -> (N, C, OH, OW), the mean over each window (runtime/OPS.md). Attributes:
// kernel is[2], stride is[2] (default: kernel), padding is[2], ceil_mode i, count_include_pad i (default 1),
// divisor_override i (0 = none). The divisor follows PyTorch: the window clipped to the padded input
// (count_include_pad) or to the input itself; the sum runs over the window's taps in row-major order.
#include "kernels/common/pool.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "avg_pool2d";

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, kernels::AvgPoolGeometry* g) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "input (N, C, H, W)", in[0], 4));
  return kernels::avg_pool_geometry(kOp, attrs, in[0].shape, g);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::AvgPoolGeometry g{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, &g));
  out[0] = in[0].shape;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::AvgPoolGeometry g{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g));
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  kernels::avg_pool_cells(ctx.pool, g, [&](int64_t p, int64_t o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                                           int64_t div) {
    const float* xp = x + p * g.h * g.w;
    float sum = 0.0f;
    for (int64_t ih = a0; ih < a1; ++ih)
      for (int64_t iw = b0; iw < b1; ++iw) sum += xp[ih * g.w + iw];
    y[p * g.oh * g.ow + o] = div > 0 ? sum / static_cast<float>(div) : 0.0f;
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(avg_pool2d, DType::kFloat32, infer, run);
}  // namespace dtorch
