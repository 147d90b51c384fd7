// upsample_nearest2d: x (N, C, H, W) -> (N, C, OH, OW) as F.interpolate(mode="nearest") (runtime/OPS.md):
// attribute size is[2], or scales fs[2] (OH = floor(H * scale), src = floor(dst * float32(1 / scale))).
#include "kernels/common/resample.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "upsample_nearest2d";

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
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  const int64_t planes = in[0].shape.dims[0] * in[0].shape.dims[1];
  kernels::parallel_chunks(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * ah.in * aw.in;
      float* yp = y + p * ah.out * aw.out;
      for (int64_t i = 0; i < ah.out; ++i) {
        const float* xr = xp + kernels::nearest_source(ah, i) * aw.in;
        float* yr = yp + i * aw.out;
        for (int64_t j = 0; j < aw.out; ++j) yr[j] = xr[kernels::nearest_source(aw, j)];
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(upsample_nearest2d, DType::kFloat32, infer, run);
}  // namespace dtorch
