// qadd on AVX-512 (the vnni set's CPUs): the portable kernel's bits (kernels/portable/qadd.cc, TFLite's int8 ADD; the
// multipliers: kernels/common/qadd_params.h), 16 values a step with masked loads and stores (no scalar tail).
//
// Each input's (q - zero_point) << 20 (|.| < 2^28) meets its multiplier (<= 1/2) in vnni.h's mul_shift_fast (r =
// 2^(s-1): requant::apply exactly, which never saturates here: |f| <= 255 * 2^19), the two are added (|sum| < 2^28)
// and the sum requantized with requant_fast (the output zero point in r, the saturating narrowing, the clamp).
// mul_shift_fast needs a shift s in [32, 54]. The larger input's multiplier is exactly 1/2 (s = 31): that input is
// shifted left 21 bits instead (|.| < 2^29) and divided by 2^32, the same fraction (apply's numerator and
// denominator both doubled, so the same floor). Other scales (a multiplier below 2^-24, an output multiplier of 1/2
// or more), and broadcasts other than a scalar operand, run the x86 set's qadd (or the portable one).
#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/qadd_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace qa = kernels::qadd;
namespace rq = kernels::requant;

// The next best qadd: the x86 set's, else the portable one.
const KernelDef* fallback() {
  static const KernelDef* k = [] {
    const KernelDef* x86 = find_kernel_in_set(qa::kOp, DType::kInt8, "x86");
    return x86 != nullptr ? x86 : kernels::portable_kernel<qa::kOp, DType::kInt8>();
  }();
  return k;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  qa::Params p{};
  return qa::check(attrs, in, n_in, n_out, out, &p);
}

struct Input {  // one input's step: (q - zp) << shift, times its multiplier
  __m512i zp, m, r;
  __m512i cnt;
  unsigned shift;
};

// The input step of a multiplier (see the file comment); false where mul_shift_fast cannot take it.
bool input_of(int32_t zp, const rq::Multiplier& mul, Input* in) {
  rq::Multiplier eff = mul;
  unsigned shift = qa::kLeftShift;
  if (mul.shift == 31 && mul.m != 0) {  // |q - zp| << 21 < 2^29: int32
    eff.shift = 32;
    shift = qa::kLeftShift + 1;
  }
  int64_t r = 0;
  if (!kernels::fast_multiplier(eff, 0, &r)) return false;
  *in = Input{_mm512_set1_epi32(zp), _mm512_set1_epi64(eff.m), _mm512_set1_epi64(r), kernels::fast_count(eff.shift),
              shift};
  return true;
}

inline __m512i input_step(const int8_t* q, __mmask16 live, const Input& in) {
  constexpr __mmask16 k16 = 0xFFFF;  // the all-lanes mask forms: see requantize16
  const __m512i v = _mm512_maskz_cvtepi8_epi32(k16, _mm_maskz_loadu_epi8(live, q));
  const __m512i d = _mm512_maskz_sub_epi32(k16, v, in.zp);
  return kernels::mul_shift_fast(_mm512_maskz_sll_epi32(k16, d, _mm_cvtsi32_si128(static_cast<int>(in.shift))), in.m,
                                 in.r, in.cnt);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  qa::Params p{};
  DTORCH_RETURN_IF_ERROR(qa::check_run(*ctx.attrs, in, n_in, out, n_out, &p));
  const int64_t n = out[0].shape.numel(), na = in[0].shape.numel(), nb = in[1].shape.numel();
  Input ia{}, ib{};
  int64_t ry = 0;
  const bool fast = input_of(p.a_zp, p.ma, &ia) && input_of(p.b_zp, p.mb, &ib) &&
                    kernels::fast_multiplier(p.my, p.y_zp, &ry);
  const bool shapes = (na == n || na == 1) && (nb == n || nb == 1);
  const KernelDef* next = fallback();
  if (!fast || !shapes) {
    if (next == nullptr) return op_error(StatusCode::kInternal, qa::kOp, "the portable kernel is not registered");
    return next->run(ctx, in, n_in, out, n_out);
  }
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  const __m512i my = _mm512_set1_epi64(p.my.m), rr = _mm512_set1_epi64(ry);
  const __m512i cy = kernels::fast_count(p.my.shift);
  const __m128i lo8 = _mm_set1_epi8(static_cast<char>(p.lo)), hi8 = _mm_set1_epi8(static_cast<char>(p.hi));
  // A scalar operand's step, once: its lanes all hold the same value.
  const __m512i sa = na == 1 ? input_step(a, 1, ia) : _mm512_setzero_si512();
  const __m512i sb = nb == 1 ? input_step(b, 1, ib) : _mm512_setzero_si512();
  const __m512i fa = _mm512_maskz_permutexvar_epi32(__mmask16{0xFFFF}, _mm512_setzero_si512(), sa);
  const __m512i fb = _mm512_maskz_permutexvar_epi32(__mmask16{0xFFFF}, _mm512_setzero_si512(), sb);
  kernels::parallel_chunks(ctx.pool, n, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i += 16) {
      const __mmask16 live = static_cast<__mmask16>(i1 - i >= 16 ? 0xFFFF : (uint32_t{1} << (i1 - i)) - 1);
      const __m512i xa = na == 1 ? fa : input_step(a + i, live, ia);
      const __m512i xb = nb == 1 ? fb : input_step(b + i, live, ib);
      _mm_mask_storeu_epi8(y + i, live,
                           kernels::requant_fast(_mm512_add_epi32(xa, xb), my, rr, cy, lo8, hi8));
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_VNNI_KERNEL(qadd, DType::kInt8, infer, run, nullptr);
}  // namespace dtorch
