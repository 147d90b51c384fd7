// qadd, x86-64 AVX2 kernel set (kernels/x86/x86.h): the portable kernel's bits (kernels/portable/qadd.cc, TFLite's
// int8 ADD; the multipliers: kernels/common/qadd_params.h), 16 values a step.
//
// Each input's (q - zero_point) is widened to int32 lanes and shifted left 20 bits, its multiplier applied, the two
// added, and the sum requantized with the output's multiplier, zero point and clamp: every step is requant::apply /
// requantize, done by kernels/x86/int8.h's requantize8 (exact: see there).
// - The input steps: |q - zp| <= 255 (the zero points are in [-128, 127]), so acc = (q - zp) << 20 has |acc| < 2^28,
//   and the multiplier is its_scale / (2 * max(a_scale, b_scale)) <= 1/2 (m * 2^-s too: make_multiplier's rounding
//   stops at 1/2): |f(acc)| <= 255 * 2^19 < 2^27, far inside int32, so apply never saturates. requantize8 with a
//   channel of clamp [INT32_MIN, INT32_MAX] and zero point 0 (its int32 clamp of acc is then [INT32_MIN, INT32_MAX]:
//   a no-op) gives f(acc) exactly, ties rounded up as apply rounds them.
// - The sum of the two is below 2^28 in magnitude: int32, as portable's. The output step is requantize8 with the
//   output's constants (channel_requant: any multiplier below 2^30, the final clamp where it is needed).
//
// Cases: both inputs of the output's element count (element by element); one of them that, and the other constant
// along runs of at least 16 consecutive outputs (a scalar, or a per-channel (C, 1, 1) operand: its one input step is
// computed once a run, and added to the other's lanes). Every other broadcast runs the portable kernel. The scalar
// tails are the portable arithmetic (requant::apply, requantize). Threads split the output elements; the bits do not
// depend on the count. The output may alias an input of its element count, as in portable (each value is read before
// its output is written).
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/broadcast.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/qadd_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/x86/int8.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace qa = kernels::qadd;
namespace rq = kernels::requant;
namespace x86 = kernels::x86;

constexpr int64_t kStep = 16;     // values a step
constexpr int64_t kGrain = 16384;  // values a thread's chunk

const KernelDef* portable() { return kernels::portable_kernel<qa::kOp, DType::kInt8>(); }

// One input's step, in vector and scalar form.
struct Input {
  __m256i zp;        // the zero point in every int32 lane
  x86::Requant8 rq;  // its multiplier, no clamp, zero point 0
  int32_t zp_s;
  rq::Multiplier mul;
};

Input input_of(int32_t zp, const rq::Multiplier& mul) {
  return Input{_mm256_set1_epi32(zp), x86::requant8_of(x86::channel_requant(mul, 0, INT32_MIN, INT32_MAX)), zp, mul};
}

// apply((q - zp) << 20, multiplier), as portable computes it.
inline int32_t scaled(int8_t q, const Input& in) {
  return rq::apply((q - in.zp_s) * (1 << qa::kLeftShift), in.mul);
}

// The same of 8 int8 values (the low 8 bytes of q) in int32 lanes.
__attribute__((always_inline)) inline __m256i scaled8(__m128i q, const Input& in) {
  const __m256i d = _mm256_sub_epi32(_mm256_cvtepi8_epi32(q), in.zp);
  const __m256i none = _mm256_setzero_si256();  // requantize8's lo and hi, unused without its final clamp
  return x86::requantize8(_mm256_slli_epi32(d, qa::kLeftShift), in.rq, none, none, false);
}

// The output's step.
struct Output {
  x86::Requant8 rq;
  __m256i lo, hi;
  bool clamp;  // whether requantize8 needs its final clamp (ChannelRequant::exact)
  const qa::Params* p;
};

inline int8_t requantized(int32_t acc, const Output& o) {
  return rq::requantize(acc, o.p->my, o.p->y_zp, o.p->lo, o.p->hi);
}

// y[i] = qadd(a[i], b[i]) for i in [i0, i1).
template <bool kClamp>
void add_same(const int8_t* a, const int8_t* b, int8_t* y, int64_t i0, int64_t i1, const Input& ia, const Input& ib,
              const Output& o) {
  int64_t i = i0;
  for (; i + kStep <= i1; i += kStep) {
    const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    const __m256i s0 = _mm256_add_epi32(scaled8(va, ia), scaled8(vb, ib));
    const __m256i s1 = _mm256_add_epi32(scaled8(_mm_srli_si128(va, 8), ia), scaled8(_mm_srli_si128(vb, 8), ib));
    const __m128i v = x86::pack16(x86::requantize8(s0, o.rq, o.lo, o.hi, kClamp),
                                  x86::requantize8(s1, o.rq, o.lo, o.hi, kClamp));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), v);
  }
  for (; i < i1; ++i) y[i] = requantized(scaled(a[i], ia) + scaled(b[i], ib), o);
}

// y[i] = qadd of x[i] and an operand whose input step is k, for i in [i0, i1) (the two steps' sum is the same int32
// whichever input x is).
template <bool kClamp>
void add_const(const int8_t* x, int32_t k, int8_t* y, int64_t i0, int64_t i1, const Input& ix, const Output& o) {
  const __m256i kv = _mm256_set1_epi32(k);
  int64_t i = i0;
  for (; i + kStep <= i1; i += kStep) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256i s0 = _mm256_add_epi32(scaled8(q, ix), kv);
    const __m256i s1 = _mm256_add_epi32(scaled8(_mm_srli_si128(q, 8), ix), kv);
    const __m128i v = x86::pack16(x86::requantize8(s0, o.rq, o.lo, o.hi, kClamp),
                                  x86::requantize8(s1, o.rq, o.lo, o.hi, kClamp));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), v);
  }
  for (; i < i1; ++i) y[i] = requantized(scaled(x[i], ix) + k, o);
}

// How the operand c (not of the output's element count) lines up with the output: constant along runs of `inner`
// consecutive outputs, run r reading c[r % mid]. False when it does not (its varying dimensions are not one block).
bool runs_of(const Shape& a, const Shape& b, const Shape& out, int c, int64_t* mid, int64_t* inner) {
  const kernels::BroadcastPlan plan = kernels::make_broadcast_plan(a, b, out);  // size-1 dims dropped, merged
  int t = -1;
  for (int d = 0; d < plan.ndim; ++d) {
    if (plan.st[c][d] == 0) continue;
    if (t >= 0 || plan.st[c][d] != 1) return false;
    t = d;
  }
  *mid = t < 0 ? 1 : plan.dims[t];
  *inner = 1;
  for (int d = t + 1; d < plan.ndim; ++d) *inner *= plan.dims[d];
  return true;
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  qa::Params p{};
  DTORCH_RETURN_IF_ERROR(qa::check_run(*ctx.attrs, in, n_in, out, n_out, &p));
  const Shape& want = out[0].shape;
  const int64_t n = want.numel();
  const bool a_full = in[0].shape.numel() == n, b_full = in[1].shape.numel() == n;
  const int c = a_full ? 1 : 0;  // the operand that may be broadcast
  int64_t mid = 1, inner = n;
  const bool ok = n > 0 && (a_full || b_full) &&
                  ((a_full && b_full) ||
                   (runs_of(in[0].shape, in[1].shape, want, c, &mid, &inner) && (mid == 1 || inner >= kStep)));
  if (!ok) {
    if (n == 0) return Status::Ok();
    if (portable() == nullptr) return op_error(StatusCode::kInternal, qa::kOp, "the portable kernel is not registered");
    return portable()->run(ctx, in, n_in, out, n_out);
  }
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  const Input ia = input_of(p.a_zp, p.ma), ib = input_of(p.b_zp, p.mb);
  const x86::ChannelRequant cy = x86::channel_requant(p.my, p.y_zp, p.lo, p.hi);
  const Output o{x86::requant8_of(cy), _mm256_set1_epi32(p.lo), _mm256_set1_epi32(p.hi), cy.exact == 0, &p};
  if (a_full && b_full) {
    kernels::parallel_chunks(ctx.pool, n, kGrain, [&](int64_t i0, int64_t i1) {
      if (o.clamp)
        add_same<true>(a, b, y, i0, i1, ia, ib, o);
      else
        add_same<false>(a, b, y, i0, i1, ia, ib, o);
    });
    return Status::Ok();
  }
  const int8_t* x = c == 1 ? a : b;  // of the output's element count
  const int8_t* k = c == 1 ? b : a;  // constant along runs
  const Input& ix = c == 1 ? ia : ib;
  const Input& ik = c == 1 ? ib : ia;
  kernels::parallel_chunks(ctx.pool, n, kGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t r = i0 / inner, i = i0; i < i1; ++r) {
      const int64_t e = (r + 1) * inner < i1 ? (r + 1) * inner : i1;
      const int32_t kr = scaled(k[r % mid], ik);
      if (o.clamp)
        add_const<true>(x, kr, y, i, e, ix, o);
      else
        add_const<false>(x, kr, y, i, e, ix, o);
      i = e;
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(qadd, DType::kInt8, (kernels::portable_infer<qa::kOp, DType::kInt8>), run);
}  // namespace dtorch
