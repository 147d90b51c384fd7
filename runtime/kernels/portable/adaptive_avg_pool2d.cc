// adaptive_avg_pool2d: x (N, C, H, W) -> (N, C, oh, ow); cell (i, j) is the mean of rows
// floor(i*H/oh) .. ceil((i+1)*H/oh) and the matching columns (runtime/OPS.md). Attribute: output_size is[2].
// Each window is summed in double and divided once: a window of whole rows (c0 = 0, c1 = W: global average pooling,
// the common case) is one contiguous run summed with 8 interleaved partial sums (element t into sum t % 8, combined
// as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))), which vectorizes; other windows in row-major order.
#include "kernels/common/pool.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "adaptive_avg_pool2d";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  int64_t oh = 0, ow = 0;
  *scratch_bytes = 0;
  return kernels::adaptive_infer(kOp, attrs, in, n_in, out, n_out, &oh, &ow);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::adaptive_run(kOp, ctx, in, n_in, out, n_out,
                               [](const float* xp, int64_t w, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
                                 double sum = 0.0;
                                 if (c0 == 0 && c1 == w) {
                                   const float* p = xp + r0 * w;
                                   const int64_t n = (r1 - r0) * w, n8 = n - n % 8;
                                   double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                                   for (int64_t t = 0; t < n8; t += 8)
                                     for (int l = 0; l < 8; ++l) s[l] += static_cast<double>(p[t + l]);
                                   for (int64_t t = n8; t < n; ++t) s[t % 8] += static_cast<double>(p[t]);
                                   sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
                                 } else {
                                   for (int64_t r = r0; r < r1; ++r)
                                     for (int64_t c = c0; c < c1; ++c) sum += xp[r * w + c];
                                 }
                                 return static_cast<float>(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
                               });
}

}  // namespace
DTORCH_REGISTER_KERNEL(adaptive_avg_pool2d, DType::kFloat32, infer, run);
}  // namespace dtorch
