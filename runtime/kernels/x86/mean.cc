// mean, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (each output
// sums its inputs in order in double from 0.0, divides once by the count, rounds to float32).
//
// Global average pooling of a blocked input (core/kernel.h: N x C/16 x H x W x 16), the mean over H and W of a
// 4-D tensor, runs 16 channels at a time: four vectors of 4 double accumulators take each position's 16 floats in
// position order, which is each channel's own order, so every lane does what portable's scalar loop does. NCHW
// inputs and every other reduction run the portable kernel.
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/reduce.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "mean";

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  if ((ctx.blocked_inputs & 1) == 0) return p->run(ctx, in, n_in, out, n_out);
  if (!kernels::spatial_mean(*ctx.attrs, in, n_in, n_out) || !blockable(in[0]) || n_out != 1)
    return op_error(StatusCode::kInternal, kOp, "asked to run a blocked layout its layouts() did not offer");
  const Shape& s = in[0].shape;
  const int64_t n = s.dims[0], c = s.dims[1], hw = s.dims[2] * s.dims[3], cb = c / kLayoutBlock;
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  const __m256d count = _mm256_set1_pd(static_cast<double>(hw));
  // Two blocks at a time: 8 independent accumulator chains (one block's 4 wait on the add latency).
  const int64_t units = n * cb, pairs = (units + 1) / 2;
  kernels::parallel_chunks(ctx.pool, pairs, 2, [&](int64_t b, int64_t e) {
    for (int64_t pr = b; pr < e; ++pr) {
      const int64_t u0 = 2 * pr, nb = units - u0 < 2 ? 1 : 2;
      const float* x0 = x + u0 * hw * kLayoutBlock;
      const float* x1 = nb == 2 ? x0 + hw * kLayoutBlock : x0;
      __m256d a[8];
      for (int q = 0; q < 8; ++q) a[q] = _mm256_setzero_pd();
      for (int64_t i = 0; i < hw; ++i) {
        const float* v0 = x0 + i * kLayoutBlock;
        const float* v1 = x1 + i * kLayoutBlock;
        for (int q = 0; q < 4; ++q) {
          a[q] = _mm256_add_pd(a[q], _mm256_cvtps_pd(_mm_loadu_ps(v0 + 4 * q)));
          a[4 + q] = _mm256_add_pd(a[4 + q], _mm256_cvtps_pd(_mm_loadu_ps(v1 + 4 * q)));
        }
      }
      // (n, c) in order: block u is image u / cb, channels 16 * (u % cb) ...: outputs [16 u, 16 u + 16)
      for (int64_t k = 0; k < nb; ++k)
        for (int q = 0; q < 4; ++q)
          _mm_storeu_ps(y + (u0 + k) * kLayoutBlock + 4 * q, _mm256_cvtpd_ps(_mm256_div_pd(a[4 * k + q], count)));
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_LAYOUT_KERNEL(mean, DType::kFloat32, kernels::portable_infer<kOp>, run,
                                  kernels::spatial_mean_layouts);
}  // namespace dtorch
