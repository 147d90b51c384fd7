// dequantize in Arm NEON vectors, for the int8 kernel sets of both Arm architectures (kernels/neon64dot, AArch64, and
// kernels/neon32int8, armv7-a NEON: each set's dequantize.cc includes its own header, then this one, and registers
// kernels::dequantize_neon::run). Bit-identical to the portable kernel: (q - zero_point) is an exact small integer in
// float32 and the one multiplication by the scale is IEEE (FMUL / VMUL.F32), 16 values per step. armv7 NEON flushes
// subnormal operands and results to zero: a scale below FLT_MIN takes the portable kernel there (with a normal scale
// every nonzero product is at least the scale, so normal or infinite, as VFP gives it).
#pragma once

#if !defined(__ARM_NEON)
#error "kernels/common/dequantize_neon.h needs Arm NEON (Advanced SIMD)"
#endif

#include <arm_neon.h>
#include <stdint.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace dequantize_neon {

constexpr char kOp[] = "dequantize";

inline const KernelDef* portable() { return portable_kernel<kOp, DType::kInt8>(); }

inline Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  QuantParams q{};
  DTORCH_RETURN_IF_ERROR(quant_unary_check(DTORCH_OP_SCHEMA(dequantize), *ctx.attrs, in, n_in, out, n_out, &q));
#if defined(__aarch64__)
  const bool vectors = true;
#else
  const bool vectors = q.scale_f >= 1.17549435e-38f;  // FLT_MIN: NEON's products of a normal scale are IEEE's
#endif
  if (out[0].shape != in[0].shape || !vectors) {
    if (portable() == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
    return portable()->run(ctx, in, n_in, out, n_out);
  }
  const int8_t* x = in[0].as<const int8_t>();
  float* y = out[0].as<float>();
  const float32x4_t scale = vdupq_n_f32(q.scale_f);
  const int16x8_t zp = vdupq_n_s16(static_cast<int16_t>(q.zero_point));
  parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 16 <= e; i += 16) {
      const int8x16_t v = vld1q_s8(x + i);
      const int16x8_t d[2] = {vsubq_s16(vmovl_s8(vget_low_s8(v)), zp), vsubq_s16(vmovl_s8(vget_high_s8(v)), zp)};
      for (int k = 0; k < 2; ++k) {
        vst1q_f32(y + i + 8 * k, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(d[k]))), scale));
        vst1q_f32(y + i + 8 * k + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(d[k]))), scale));
      }
    }
    for (; i < e; ++i) y[i] = requant::dequantize(x[i], q.scale_f, q.zero_point);
  });
  return Status::Ok();
}

}  // namespace dequantize_neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
