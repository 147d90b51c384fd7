// qadd in Arm NEON vectors, for the int8 kernel sets of both Arm architectures (kernels/neon64dot, AArch64, and
// kernels/neon32int8, armv7-a NEON: each set's qadd.cc includes its own header, then this one, and registers
// kernels::qadd_neon::infer and run). The portable kernel's bits (kernels/portable/qadd.cc, TFLite's int8 ADD; the
// multipliers: kernels/common/qadd_params.h) for inputs of the output's shape, 16 values a step: each input's
// (q - zero_point) widened and shifted left 20 bits in int32 lanes, its multiplier applied (requant_apply: the same
// single rounding), the sum requantized with the output's. Broadcasting inputs take the portable kernel.
#pragma once

#if !defined(__ARM_NEON)
#error "kernels/common/qadd_neon.h needs Arm NEON (Advanced SIMD)"
#endif

#include <arm_neon.h>
#include <stdint.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/qadd_params.h"
#include "kernels/common/requant_neon.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace qadd_neon {

inline const KernelDef* portable() { return portable_kernel<qadd::kOp, DType::kInt8>(); }

inline Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                    size_t* scratch_bytes) {
  *scratch_bytes = 0;
  qadd::Params p{};
  return qadd::check(attrs, in, n_in, n_out, out, &p);
}

// (q - zero_point) << 20 of 16 values, as 4 int32 vectors, times the input's multiplier.
struct Input {
  int8x8_t zp;
  Requant rq;
};

__attribute__((always_inline)) inline void scaled16(int8x16_t q, const Input& in, int32x4_t out[4]) {
  const int16x8_t lo = vsubl_s8(vget_low_s8(q), in.zp), hi = vsubl_s8(vget_high_s8(q), in.zp);
  out[0] = requant_apply(vshlq_n_s32(vmovl_s16(vget_low_s16(lo)), qadd::kLeftShift), in.rq);
  out[1] = requant_apply(vshlq_n_s32(vmovl_s16(vget_high_s16(lo)), qadd::kLeftShift), in.rq);
  out[2] = requant_apply(vshlq_n_s32(vmovl_s16(vget_low_s16(hi)), qadd::kLeftShift), in.rq);
  out[3] = requant_apply(vshlq_n_s32(vmovl_s16(vget_high_s16(hi)), qadd::kLeftShift), in.rq);
}

inline Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  qadd::Params p{};
  DTORCH_RETURN_IF_ERROR(qadd::check_run(*ctx.attrs, in, n_in, out, n_out, &p));
  const Shape& want = out[0].shape;
  if (in[0].shape != want || in[1].shape != want) {
    if (portable() == nullptr)
      return op_error(StatusCode::kInternal, qadd::kOp, "the portable kernel is not registered");
    return portable()->run(ctx, in, n_in, out, n_out);
  }
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  const Input ia{vdup_n_s8(static_cast<int8_t>(p.a_zp)), requant_of(p.ma, 0, -128, 127)};
  const Input ib{vdup_n_s8(static_cast<int8_t>(p.b_zp)), requant_of(p.mb, 0, -128, 127)};
  const Requant ry = requant_of(p.my, p.y_zp, p.lo, p.hi);
  const int64_t n = want.numel();
  const int64_t full = n / 16;
  parallel_chunks(ctx.pool, full, 1024, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int32x4_t sa[4], sb[4];
      scaled16(vld1q_s8(a + 16 * c), ia, sa);
      scaled16(vld1q_s8(b + 16 * c), ib, sb);
      vst1q_s8(y + 16 * c, requantize16(vaddq_s32(sa[0], sb[0]), vaddq_s32(sa[1], sb[1]), vaddq_s32(sa[2], sb[2]),
                                        vaddq_s32(sa[3], sb[3]), ry));
    }
  });
  for (int64_t i = full * 16; i < n; ++i) {
    const int32_t sa = requant::apply((a[i] - p.a_zp) * (1 << qadd::kLeftShift), p.ma);
    const int32_t sb = requant::apply((b[i] - p.b_zp) * (1 << qadd::kLeftShift), p.mb);
    y[i] = requant::requantize(sa + sb, p.my, p.y_zp, p.lo, p.hi);
  }
  return Status::Ok();
}

}  // namespace qadd_neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
