// max_pool2d, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (the same
// rule per tap, in the same order: a tap replaces the running maximum when it is greater or NaN, starting from
// -inf; so ties keep the first tap, e.g. -0 before +0, and a window with NaNs gives its last NaN).
//
// Eight output columns of one output row per vector: for each tap (row-major, as portable), the eight inputs come
// from one plain load (column stride 1), two loads keeping the even floats (stride 2), or a masked gather (other
// strides, and columns that meet the padding or the row's end, whose lanes are left out of the update).
// Threads split (image, channel) planes only. Planes too wide for 32-bit gather offsets run the portable kernel.
#include <immintrin.h>

#include <climits>
#include <cstdint>
#include <limits>

#include "kernels/common/pool.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "max_pool2d";

// Floats [0, 16) at p -> the even ones, in order.
inline __m256 even_floats(const float* p) {
  const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
  const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)));
}

// best = v where v > best or v is NaN, every lane: maxps(v, best) is v where v > best and best otherwise (also
// where either is NaN), then the NaN lanes of v.
inline __m256 take_all(__m256 best, __m256 v) {
  return _mm256_blendv_ps(_mm256_max_ps(v, best), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

// best = v where (v > best or v is NaN) and the lane is in `keep`.
inline __m256 take(__m256 best, __m256 v, __m256 keep) {
  const __m256 upd = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(best, v, _mm256_and_ps(upd, keep));
}

void plane(const kernels::MaxPoolGeometry& g, const float* xp, float* yp) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i W = _mm256_set1_epi32(static_cast<int32_t>(g.w));
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += 8) {
      const int nq = static_cast<int>(g.ow - ow0 < 8 ? g.ow - ow0 : 8);
      const __m256i q_ok = kernels::x86::lane_mask(nq);
      // input column of lane l at tap column 0: (ow0 + l) * sw - pw
      const __m256i col0 = _mm256_sub_epi32(
          _mm256_mullo_epi32(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(ow0)), lanes),
                             _mm256_set1_epi32(static_cast<int32_t>(g.sw))),
          _mm256_set1_epi32(static_cast<int32_t>(g.pw)));
      __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ih = oh * g.sh - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        const float* row = xp + ih * g.w;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t first = ow0 * g.sw - g.pw + j * g.dw;  // lane 0's input column
          if (nq == 8 && first >= 0 && g.sw == 1 && first + 8 <= g.w) {
            best = take_all(best, _mm256_loadu_ps(row + first));
          } else if (nq == 8 && first >= 0 && g.sw == 2 && first + 16 <= g.w) {
            best = take_all(best, even_floats(row + first));
          } else {
            const __m256i iw = _mm256_add_epi32(col0, _mm256_set1_epi32(static_cast<int32_t>(j * g.dw)));
            const __m256i ok = _mm256_and_si256(
                _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), iw), _mm256_cmpgt_epi32(W, iw)), q_ok);
            const __m256 okf = _mm256_castsi256_ps(ok);
            const __m256i idx = _mm256_and_si256(iw, ok);  // 0 where masked off (never read)
            const __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, idx, okf, 4);
            best = take(best, v, okf);
          }
        }
      }
      float* y = yp + oh * g.ow + ow0;
      if (nq == 8)
        _mm256_storeu_ps(y, best);
      else
        _mm256_maskstore_ps(y, q_ok, best);
    }
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  // The portable kernel's checks (and its errors); then the shapes it accepted.
  Shape expect;
  size_t scratch = 0;
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(p->infer(*ctx.attrs, in, n_in, &expect, 1, &scratch));
  if (!(out[0].shape == expect)) return p->run(ctx, in, n_in, out, n_out);  // the portable kernel reports it
  kernels::MaxPoolGeometry g{};
  DTORCH_RETURN_IF_ERROR(kernels::max_pool_geometry(kOp, *ctx.attrs, in[0], out[0].shape, &g));
  // lane columns up to (ow + 7) * sw + (kw - 1) * dw must fit int32 (with the input width)
  const int64_t reach = (g.ow + 8) * g.sw + (g.kw - 1) * g.dw + g.pw;
  if (reach > INT32_MAX / 2 || g.w > INT32_MAX / 2) return p->run(ctx, in, n_in, out, n_out);
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, g.n * g.c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t q = p0; q < p1; ++q) plane(g, x + q * g.h * g.w, y + q * g.oh * g.ow);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(max_pool2d, DType::kFloat32, kernels::portable_infer<kOp>, run);
}  // namespace dtorch
