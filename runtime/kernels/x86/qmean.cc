// qmean, x86-64 AVX2 kernel set (kernels/x86/x86.h): the portable kernel's bits (kernels/portable/qmean.cc is the
// specification). A mean over the trailing axes (global average pooling: each output averages a contiguous run of
// `count` inputs) sums each run 32 bytes a step with vpsadbw on u = x + 128 (x ^ 0x80: the sum of absolute
// differences against 0 adds 8 bytes into each 64-bit lane), then takes 128 * count and x_zero_point * count back:
// the same integer as portable's int32 sum of x - x_zero_point (exact: count <= 2^23, so |sum| < 2^31), requantized
// with requant::requantize. Other reductions run the portable kernel.
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/reduce.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "qmean";

// sum(x[0 .. m)) + 128 * m: each byte as u8 (x ^ 0x80).
inline int64_t sum_u8(const int8_t* x, int64_t m) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), zero = _mm256_setzero_si256();
  __m256i a0 = zero, a1 = zero;
  int64_t i = 0;
  for (; i + 64 <= m; i += 64) {
    a0 = _mm256_add_epi64(a0, _mm256_sad_epu8(_mm256_xor_si256(
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip), zero));
    a1 = _mm256_add_epi64(a1, _mm256_sad_epu8(_mm256_xor_si256(
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 32)), flip), zero));
  }
  for (; i + 32 <= m; i += 32)
    a0 = _mm256_add_epi64(a0, _mm256_sad_epu8(_mm256_xor_si256(
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip), zero));
  const __m256i a = _mm256_add_epi64(a0, a1);
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  int64_t s = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
  for (; i < m; ++i) s += static_cast<uint8_t>(x[i]) ^ 0x80u;
  return s;
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* portable = kernels::portable_kernel<kOp, DType::kInt8>();
  if (portable == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  Shape want;
  size_t scratch = 0;
  DTORCH_RETURN_IF_ERROR(portable->infer(*ctx.attrs, in, n_in, &want, n_out, &scratch));  // its checks, its errors
  kernels::ReducePlan plan;
  if (!kernels::reduce_plan(kOp, *ctx.attrs, in, n_in, n_out, &plan).ok() ||
      !kernels::reduce_is_trailing(plan, in[0].shape) || plan.count == 0)
    return portable->run(ctx, in, n_in, out, n_out);
  if (out[0].dtype != DType::kInt8 || out[0].shape != want)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(want).c_str());
  double x_scale = 0.0, y_scale = 0.0;
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, *ctx.attrs, "x_scale", &x_scale));
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, *ctx.attrs, "y_scale", &y_scale));
  const int64_t x_zp = ctx.attrs->get_int("x_zero_point"), y_zp = ctx.attrs->get_int("y_zero_point");
  const int64_t m = plan.count, n = want.numel();
  const kernels::requant::Multiplier mul =
      kernels::requant::make_multiplier(x_scale / (y_scale * static_cast<double>(m)));
  const int8_t* x = in[0].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  kernels::parallel_chunks(ctx.pool, n, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t s = sum_u8(x + o * m, m) - (128 + x_zp) * m;  // |s| <= 255 * 2^23: exact, and inside int32
      y[o] = kernels::requant::requantize(static_cast<int32_t>(s), mul, static_cast<int32_t>(y_zp),
                                          kernels::requant::kQMin, kernels::requant::kQMax);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(qmean, DType::kInt8, (kernels::portable_infer<kOp, DType::kInt8>), run);
}  // namespace dtorch
