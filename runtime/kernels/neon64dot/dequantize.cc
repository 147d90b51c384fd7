// dequantize, AArch64 int8 kernel set (kernels/neon64dot/neon64dot.h). Bit-identical to the portable kernel:
// (q - zero_point) is an exact small integer in float32 and the one multiplication by the scale is IEEE (FMUL);
// 16 values per step.
#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/neon64dot/neon64dot.h"

namespace dtorch {
namespace {

constexpr char kOp[] = "dequantize";

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::QuantParams q{};
  DTORCH_RETURN_IF_ERROR(
      kernels::quant_unary_check(DTORCH_OP_SCHEMA(dequantize), *ctx.attrs, in, n_in, out, n_out, &q));
  if (out[0].shape != in[0].shape) {
    if (portable() == nullptr) return kernels::op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
    return portable()->run(ctx, in, n_in, out, n_out);
  }
  const int8_t* x = in[0].as<const int8_t>();
  float* y = out[0].as<float>();
  const float32x4_t scale = vdupq_n_f32(q.scale_f);
  const int16x8_t zp = vdupq_n_s16(static_cast<int16_t>(q.zero_point));
  kernels::parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 16 <= e; i += 16) {
      const int8x16_t v = vld1q_s8(x + i);
      const int16x8_t d[2] = {vsubq_s16(vmovl_s8(vget_low_s8(v)), zp), vsubq_s16(vmovl_high_s8(v), zp)};
      for (int k = 0; k < 2; ++k) {
        vst1q_f32(y + i + 8 * k, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(d[k]))), scale));
        vst1q_f32(y + i + 8 * k + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(d[k])), scale));
      }
    }
    for (; i < e; ++i) y[i] = kernels::requant::dequantize(x[i], q.scale_f, q.zero_point);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_NEON64DOT_KERNEL(dequantize, DType::kInt8, (kernels::portable_infer<kOp, DType::kInt8>), run, nullptr);
}  // namespace dtorch
