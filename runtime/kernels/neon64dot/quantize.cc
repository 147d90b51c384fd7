// quantize, AArch64 int8 kernel set (kernels/neon64dot/neon64dot.h). Bit-identical to the portable kernel: the same
// float32 division (FDIV is IEEE), the same ties-to-even rounding (FRINTN; portable's 1.5 * 2^23 addition gives the
// same integer for every value the clamp keeps), the same clamp, and the zero point for NaN (FMAX/FMIN keep a NaN,
// FCVTZS turns it into 0); 16 values per step, narrowed with saturation (exact: they are in [-128, 127] already).
#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/neon64dot/neon64dot.h"

namespace dtorch {
namespace {

constexpr char kOp[] = "quantize";

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::QuantParams q{};
  DTORCH_RETURN_IF_ERROR(kernels::quant_unary_check(DTORCH_OP_SCHEMA(quantize), *ctx.attrs, in, n_in, out, n_out, &q));
  if (out[0].shape != in[0].shape) return kernels::portable_kernel<kOp>()->run(ctx, in, n_in, out, n_out);
  const float* x = in[0].as<const float>();
  int8_t* y = out[0].as<int8_t>();
  const float32x4_t scale = vdupq_n_f32(q.scale_f);
  const float32x4_t lo = vdupq_n_f32(static_cast<float>(kernels::requant::kQMin - q.zero_point));
  const float32x4_t hi = vdupq_n_f32(static_cast<float>(kernels::requant::kQMax - q.zero_point));
  const int16x8_t zp = vdupq_n_s16(static_cast<int16_t>(q.zero_point));
  kernels::parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    auto q4 = [&](const float* p) {
      const float32x4_t r = vrndnq_f32(vdivq_f32(vld1q_f32(p), scale));
      return vcvtq_s32_f32(vminq_f32(vmaxq_f32(r, lo), hi));
    };
    int64_t i = b;
    for (; i + 16 <= e; i += 16) {
      const int16x8_t h0 = vaddq_s16(vmovn_high_s32(vmovn_s32(q4(x + i)), q4(x + i + 4)), zp);
      const int16x8_t h1 = vaddq_s16(vmovn_high_s32(vmovn_s32(q4(x + i + 8)), q4(x + i + 12)), zp);
      vst1q_s8(y + i, vqmovn_high_s16(vqmovn_s16(h0), h1));
    }
    for (; i < e; ++i) y[i] = kernels::requant::quantize(x[i], q.scale_f, q.zero_point);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_NEON64DOT_KERNEL(quantize, DType::kFloat32, kernels::portable_infer<kOp>, run, nullptr);
}  // namespace dtorch
