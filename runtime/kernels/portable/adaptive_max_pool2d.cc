// adaptive_max_pool2d: x (N, C, H, W) -> (N, C, oh, ow); cell (i, j) is the maximum of rows
// floor(i*H/oh) .. ceil((i+1)*H/oh) and the matching columns (runtime/OPS.md); a NaN wins, as in PyTorch.
// Attribute: output_size is[2].
#include <cmath>

#include "kernels/common/pool.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "adaptive_max_pool2d";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  int64_t oh = 0, ow = 0;
  *scratch_bytes = 0;
  return kernels::adaptive_infer(kOp, attrs, in, n_in, out, n_out, &oh, &ow);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape expect;
  int64_t oh = 0, ow = 0;
  DTORCH_RETURN_IF_ERROR(kernels::adaptive_infer(kOp, *ctx.attrs, in, n_in, &expect, n_out, &oh, &ow));
  const int64_t h = in[0].shape.dims[2], w = in[0].shape.dims[3];
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, in[0].shape.dims[0] * in[0].shape.dims[1], 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * h * w;
      float* yp = y + p * oh * ow;
      for (int64_t i = 0; i < oh; ++i) {
        int64_t r0, r1;
        kernels::adaptive_window(i, h, oh, &r0, &r1);
        for (int64_t j = 0; j < ow; ++j) {
          int64_t c0, c1;
          kernels::adaptive_window(j, w, ow, &c0, &c1);
          float best = xp[r0 * w + c0];
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) {
              const float v = xp[r * w + c];
              if (v > best || std::isnan(v)) best = v;
            }
          yp[i * ow + j] = best;
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL("adaptive_max_pool2d", DType::kFloat32, infer, run, 1, 1, 0, 1);
}  // namespace dtorch
