// mean, x86-64 AVX-512 kernel set (kernels/avx512/avx512.h). Tolerance: bit-identical to the portable kernel, as
// the x86 set's mean (each output sums its inputs in order in double from 0.0, divides once by the count, rounds to
// float32), though the set as a whole is not bit-exact; the "exact" policy runs the x86 one, with the same bits.
//
// Global average pooling of a blocked input (core/kernel.h: N x C/16 x H x W x 16), the mean over H and W of a
// 4-D tensor: a position's 16 channels are two vectors of 8 doubles, so one conversion takes 8 floats where the x86
// set's takes 4 (its conversions bound it: SimpleNet's 128 x 28 x 28 mean took 0.016 ms there). Four blocks at a
// time: 8 independent accumulator chains, each lane a channel adding its positions in order, as portable's scalar
// loop. NCHW inputs and every other reduction run the portable kernel.
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/avx512.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/reduce.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;

constexpr char kOp[] = "mean";
constexpr int64_t kBlocks = 4;  // 16-channel blocks per unit of work

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  if ((ctx.blocked_inputs & 1) == 0) return p->run(ctx, in, n_in, out, n_out);
  if (!kernels::spatial_mean(*ctx.attrs, in, n_in, n_out) || !blockable(in[0]) || n_out != 1)
    return op_error(StatusCode::kInternal, kOp, "asked to run a blocked layout its layouts() did not offer");
  const Shape& s = in[0].shape;
  const int64_t n = s.dims[0], c = s.dims[1], hw = s.dims[2] * s.dims[3], units = n * (c / kLayoutBlock);
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  const __m512d count = _mm512_set1_pd(static_cast<double>(hw));
  // The conversions as maskz with every lane: the plain _mm512_cvtps_pd / _mm512_cvtpd_ps trip GCC 12's
  // -Wmaybe-uninitialized (their undefined merge source).
  const __mmask8 all = 0xFF;
  kernels::parallel_chunks(ctx.pool, kernels::ceil_div(units, kBlocks), 1, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t u0 = q * kBlocks, nb = units - u0 < kBlocks ? units - u0 : kBlocks;
      // Blocks past the last one read the last one again; their sums are not stored.
      const float* xb[kBlocks];
      for (int64_t k = 0; k < kBlocks; ++k) xb[k] = x + (u0 + (k < nb ? k : nb - 1)) * hw * kLayoutBlock;
      __m512d a[2 * kBlocks];
      for (int k = 0; k < 2 * kBlocks; ++k) a[k] = _mm512_setzero_pd();
      for (int64_t i = 0; i < hw; ++i) {
        const int64_t at = i * kLayoutBlock;
        for (int k = 0; k < kBlocks; ++k) {
          a[2 * k] = _mm512_add_pd(a[2 * k], _mm512_maskz_cvtps_pd(all, _mm256_loadu_ps(xb[k] + at)));
          a[2 * k + 1] = _mm512_add_pd(a[2 * k + 1], _mm512_maskz_cvtps_pd(all, _mm256_loadu_ps(xb[k] + at + 8)));
        }
      }
      // (n, c) in order: block u is image u / (c / 16), channels 16 * (u % (c / 16)) ...: outputs [16 u, 16 u + 16)
      for (int64_t k = 0; k < nb; ++k) {
        float* yk = y + (u0 + k) * kLayoutBlock;
        _mm256_storeu_ps(yk, _mm512_maskz_cvtpd_ps(all, _mm512_div_pd(a[2 * k], count)));
        _mm256_storeu_ps(yk + 8, _mm512_maskz_cvtpd_ps(all, _mm512_div_pd(a[2 * k + 1], count)));
      }
    }
  });
  return Status::Ok();
}

}  // namespace

DTORCH_REGISTER_AVX512_LAYOUT_KERNEL(mean, DType::kFloat32, kernels::portable_infer<kOp>, run, nullptr,
                                     kernels::spatial_mean_layouts);

}  // namespace dtorch
