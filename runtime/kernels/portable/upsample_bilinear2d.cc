// upsample_bilinear2d: x (N, C, H, W) -> (N, C, OH, OW) as F.interpolate(mode="bilinear") (runtime/OPS.md):
// attribute size is[2] or scales fs[2] (as upsample_nearest2d), align_corners i. Source positions and
// weights are computed in float32 as PyTorch's CPU kernel does; each output is
// (x[h0][w0] * b0 + x[h0][w1] * b1) * a0 + (x[h1][w0] * b0 + x[h1][w1] * b1) * a1 (along W, then H).
#include "kernels/common/resample.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "upsample_bilinear2d";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  kernels::ResampleAxis ah, aw;
  DTORCH_RETURN_IF_ERROR(kernels::resample_geometry(kOp, attrs, in, n_in, n_out, &ah, &aw));
  out[0] = in[0].shape;
  out[0].dims[2] = ah.out;
  out[0].dims[3] = aw.out;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::ResampleAxis ah, aw;
  DTORCH_RETURN_IF_ERROR(kernels::resample_geometry(kOp, *ctx.attrs, in, n_in, n_out, &ah, &aw));
  const bool align = ctx.attrs->get_int("align_corners") != 0;
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  const int64_t planes = in[0].shape.dims[0] * in[0].shape.dims[1];
  kernels::parallel_chunks(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * ah.in * aw.in;
      float* yp = y + p * ah.out * aw.out;
      for (int64_t i = 0; i < ah.out; ++i) {
        int64_t h0, h1;
        float a0, a1;
        kernels::linear_source(ah, align, i, &h0, &h1, &a0, &a1);
        const float* r0 = xp + h0 * aw.in;
        const float* r1 = xp + h1 * aw.in;
        float* yr = yp + i * aw.out;
        for (int64_t j = 0; j < aw.out; ++j) {
          int64_t w0, w1;
          float b0, b1;
          kernels::linear_source(aw, align, j, &w0, &w1, &b0, &b1);
          const float top = r0[w0] * b0 + r0[w1] * b1;
          const float bot = r1[w0] * b0 + r1[w1] * b1;
          yr[j] = top * a0 + bot * a1;
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(upsample_bilinear2d, DType::kFloat32, infer, run);
}  // namespace dtorch
