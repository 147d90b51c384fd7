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
  return kernels::adaptive_run(kOp, ctx, in, n_in, out, n_out,
                               [](const float* xp, int64_t w, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
                                 float best = xp[r0 * w + c0];
                                 for (int64_t r = r0; r < r1; ++r)
                                   for (int64_t c = c0; c < c1; ++c) {
                                     const float v = xp[r * w + c];
                                     if (v > best || std::isnan(v)) best = v;
                                   }
                                 return best;
                               });
}

}  // namespace
DTORCH_REGISTER_KERNEL(adaptive_max_pool2d, DType::kFloat32, infer, run);
}  // namespace dtorch
