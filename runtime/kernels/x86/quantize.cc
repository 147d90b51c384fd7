// quantize, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel: the same
// float32 division, the same ties-to-even rounding (roundps; portable's 1.5 * 2^23 addition gives the same integer
// for every value the clamp keeps), the same clamp and the zero point for NaN; 32 values per step, packed to int8
// with saturating packs (exact: the values are in [-128, 127] already).
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

constexpr char kOp[] = "quantize";

// 8 quantized values as int32 lanes (before the zero point is added).
inline __m256i quantize8(__m256 x, __m256 scale, __m256 lo, __m256 hi) {
  const __m256 v = _mm256_div_ps(x, scale);
  __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
  r = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN: 0, the zero point once it is added
  return _mm256_cvtps_epi32(r);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::QuantParams q{};
  DTORCH_RETURN_IF_ERROR(kernels::quant_unary_check(DTORCH_OP_SCHEMA(quantize), *ctx.attrs, in, n_in, out, n_out, &q));
  if (out[0].shape != in[0].shape) return kernels::portable_kernel<kOp>()->run(ctx, in, n_in, out, n_out);
  const float* x = in[0].as<const float>();
  int8_t* y = out[0].as<int8_t>();
  const __m256 scale = _mm256_set1_ps(q.scale_f);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(kernels::requant::kQMin - q.zero_point));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(kernels::requant::kQMax - q.zero_point));
  const __m256i zp = _mm256_set1_epi32(q.zero_point);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  kernels::parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 32 <= e; i += 32) {
      __m256i v[4];
      for (int k = 0; k < 4; ++k) v[k] = _mm256_add_epi32(quantize8(_mm256_loadu_ps(x + i + 8 * k), scale, lo, hi), zp);
      const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permutevar8x32_epi32(w, order));
    }
    for (; i < e; ++i) y[i] = kernels::requant::quantize(x[i], q.scale_f, q.zero_point);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(quantize, DType::kFloat32, kernels::portable_infer<kOp>, run);
}  // namespace dtorch
