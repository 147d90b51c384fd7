// max_pool2d, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (the same
// rule per tap, in the same order: a tap replaces the running maximum when it is greater or NaN, starting from
// -inf; so ties keep the first tap, e.g. -0 before +0, and a window with NaNs gives its last NaN).
//
// Column strides 1 and 2 run separably (`Separable`): each input row is folded over the window's columns once (in
// place where the taps stay inside the row, else from a copy padded with -inf), and each output row folds those row
// maxima over the window's rows, with plain maxps. Folding rows, then columns, gives the row-major fold's result: the last NaN if the window
// has one (the last row holding a NaN, its last NaN), else the first tap equal to the maximum (the first row reaching
// it, its first such tap). maxps(v, best) is that rule when no NaN is present (it returns best on ties, -0 vs +0
// included), so the row copies watch for NaN and a plane that has one is recomputed by the tap-by-tap path.
// Tap by tap (other strides, planes whose rows do not fit the separable buffers, and planes with a NaN): eight
// output columns of one output row per vector: for each tap (row-major, as portable), the eight inputs come
// from one plain load (column stride 1), two loads keeping the even floats (stride 2), or a masked gather (other
// strides, and columns that meet the padding or the row's end, whose lanes are left out of the update).
// Blocked inputs (core/kernel.h) give blocked outputs, tap by tap over 16 channels at a time: plain maxps while no
// NaN is read, the rule tap by tap for a row whose windows hold one (blocked_row).
// Threads split NCHW tensors by (image, channel) plane, blocked ones by rows (PlaneRows). Planes too wide for 32-bit gather offsets run the portable kernel.
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

// --- separable: row folds, then column folds ------------------------------------------------------------

// Floats of one plane's separable buffers on the stack (per thread): a padded row and a ring of row maxima (one per
// input row a window spans). Larger planes run tap by tap.
constexpr int64_t kSepFloats = 8192;
constexpr int64_t kSepMaxSpan = 64;

// The buffers' sizes, the same for every plane of a node.
struct SepSizes {
  int64_t owr;   // output columns rounded up to whole vectors
  int64_t pr;    // floats of the padded row (a multiple of 16): column u holds input column u - pw, -inf outside
  int64_t span;  // input rows a window spans: the ring's rows
  explicit SepSizes(const kernels::MaxPoolGeometry& g)
      : owr((g.ow + 7) / 8 * 8),
        pr((g.sw * (owr + (g.kw - 1) * g.dw / g.sw + 1) + 15) / 16 * 16),
        span((g.kh - 1) * g.dh + 1) {}
  // Whether the separable path takes the node's planes.
  bool fits(const kernels::MaxPoolGeometry& g) const {
    return (g.sw == 1 || g.sw == 2) && span <= kSepMaxSpan && pr + span * owr <= kSepFloats;
  }
};

struct Separable : SepSizes {
  const kernels::MaxPoolGeometry& g;
  float* prow;
  float* ring;   // span rows of owr row maxima; ring row ih % span holds input row have[ih % span]
  int64_t have[kSepMaxSpan];

  Separable(const kernels::MaxPoolGeometry& g_, const SepSizes& sz, float* buf)
      : SepSizes(sz), g(g_), prow(buf), ring(buf + pr) {}

  // The padded copy of input row `row`; returns a mask whose lanes are set where a NaN was copied.
  __m256 pad_row(const float* row) const {
    __m256 nan = _mm256_setzero_ps();
    const int64_t u0 = g.pw < pr ? g.pw : pr, u1 = g.pw + g.w < pr ? g.pw + g.w : pr;  // columns from the input
    for (int64_t u = 0; u < u0; ++u) prow[u] = -std::numeric_limits<float>::infinity();
    int64_t u = u0;
    for (; u + 8 <= u1; u += 8) {
      const __m256 v = _mm256_loadu_ps(row + (u - g.pw));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      _mm256_storeu_ps(prow + u, v);
    }
    if (u < u1) {  // the tail (masked-off lanes load 0: no NaN)
      const __m256i m = kernels::x86::lane_mask(static_cast<int>(u1 - u));
      const __m256 v = _mm256_maskload_ps(row + (u - g.pw), m);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      _mm256_maskstore_ps(prow + u, m, v);
      u = u1;
    }
    for (; u < pr; ++u) prow[u] = -std::numeric_limits<float>::infinity();
    return nan;
  }

  // Ring row `dst` = input row `row` folded over the window's columns; NaNs seen are or-ed into *nan. Vectors whose
  // taps all lie inside the row read it in place; the others read the padded copy, after the in-place ones: a load
  // that spans two recent stores waits until they reach the cache, and by then they have.
  void fold_row(const float* row, float* dst, __m256* nan) const {
    *nan = _mm256_or_ps(*nan, pad_row(row));
    const int64_t reach = (g.kw - 1) * g.dw + 8 * g.sw;  // floats a vector's taps read from its first column on
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t q = 0; q < owr; q += 8) {
        const int64_t first = q * g.sw - g.pw;  // input column of lane 0's tap 0
        const bool inside = first >= 0 && first + reach <= g.w;
        if (inside != (pass == 0)) continue;
        const float* p = inside ? row + first : prow + q * g.sw;
        __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < g.kw; ++j)
          best = _mm256_max_ps(g.sw == 1 ? _mm256_loadu_ps(p + j * g.dw) : even_floats(p + j * g.dw), best);
        _mm256_storeu_ps(dst + q, best);
      }
    }
  }

  // The plane; false when it holds a NaN (its output is then incomplete).
  bool plane(const float* xp, float* yp) {
    for (int64_t s = 0; s < span; ++s) have[s] = -1;
    __m256 nan = _mm256_setzero_ps();
    const __m256i tail = kernels::x86::lane_mask(static_cast<int>(g.ow - (owr - 8)));
    const float* rows[kSepMaxSpan];
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      int nr = 0;
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ih = oh * g.sh - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;  // padding rows: -inf, never taken
        float* r = ring + (ih % span) * owr;
        if (have[ih % span] != ih) {
          fold_row(xp + ih * g.w, r, &nan);
          have[ih % span] = ih;
        }
        rows[nr++] = r;
      }
      float* y = yp + oh * g.ow;
      for (int64_t q = 0; q < owr; q += 8) {
        __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
        for (int k = 0; k < nr; ++k) best = _mm256_max_ps(_mm256_loadu_ps(rows[k] + q), best);
        if (q + 8 <= g.ow)
          _mm256_storeu_ps(y + q, best);
        else
          _mm256_maskstore_ps(y + q, tail, best);
      }
    }
    return _mm256_movemask_ps(nan) == 0;
  }
};

// f(p) for each tap of output (oh, ow) of a blocked plane that lies inside the image, row-major (as portable): p is
// the tap's 16 channels.
template <class F>
inline void blocked_taps(const kernels::MaxPoolGeometry& g, const float* xb, int64_t oh, int64_t ow, F&& f) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.sw - g.pw + j * g.dw;
      if (iw >= 0 && iw < g.w) f(xb + (ih * g.w + iw) * kLayoutBlock);
    }
  }
}

// Blocked X and Y (core/kernel.h), output row oh of one (image, 16-channel block): each position's 16 channels are
// two vectors, which take the window's taps one by one (row-major, as portable; taps outside the image skipped).
// kFast false: portable's rule in every lane (take_all); returns true. kFast true: plain maxps per tap (maxps(v, best)
// is the rule without NaN, ties keeping the first tap), each tap's two vectors checked for NaN together (one
// unordered compare); returns false when a NaN was read, the row's outputs then incomplete (redo it with kFast false).
// Beside its two loads, the fast row takes 4 instructions per tap instead of 6: ResNet-18's 3 x 3 stride-2 pool over
// 64 x 112 x 112 took 0.333 -> 0.190 ms at 1 thread and 0.216 -> 0.117 at 2 (Intel AVX-512 VM; ONNX Runtime's 0.15
// and 0.09: the input, 3.2 MB, comes from L3).
template <bool kFast>
bool blocked_row(const kernels::MaxPoolGeometry& g, const float* xb, float* yb, int64_t oh) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    __m256 b0 = ninf, b1 = ninf;
    blocked_taps(g, xb, oh, ow, [&](const float* v) {
      const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
      if constexpr (kFast) {
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
        b0 = _mm256_max_ps(v0, b0);
        b1 = _mm256_max_ps(v1, b1);
      } else {
        b0 = take_all(b0, v0);
        b1 = take_all(b1, v1);
      }
    });
    float* o = yb + (oh * g.ow + ow) * kLayoutBlock;
    _mm256_storeu_ps(o, b0);
    _mm256_storeu_ps(o + 8, b1);
  }
  return _mm256_movemask_ps(nan) == 0;
}

// X and Y blocked together when the portable kernel accepts the node.
LayoutCaps layouts(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* out, int n_out) {
  LayoutCaps caps;
  const KernelDef* p = kernels::portable_kernel<kOp>();
  Shape expect;
  size_t scratch = 0;
  if (p == nullptr || n_out != 1 || !p->infer(attrs, in, n_in, &expect, 1, &scratch).ok() || !(out[0].shape == expect))
    return caps;
  caps.inputs = caps.outputs = 1;
  caps.tied = true;
  return caps;
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
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  // Blocked tensors first: the portable fallback below reads NCHW (and blocked_row indexes in int64 anyway).
  if (ctx.blocked_inputs & 1) {
    if (!(ctx.blocked_outputs & 1) || !blockable(in[0]))
      return op_error(StatusCode::kInternal, kOp, "asked to run a blocked layout its layouts() did not offer");
    const kernels::PlaneRows rows(ctx.pool, g.c / kLayoutBlock, g.oh);  // by rows with threads, as the convolutions
    kernels::parallel_chunks(ctx.pool, g.n * g.c / kLayoutBlock * g.oh, 8, [&](int64_t u0, int64_t u1) {
      kernels::PlaneRows::Pos at = rows.at(u0);
      for (int64_t u = u0; u < u1; ++u, rows.next(&at)) {
        const float* xb = x + at.plane * g.h * g.w * kLayoutBlock;
        float* yb = y + at.plane * g.oh * g.ow * kLayoutBlock;
        if (!blocked_row<true>(g, xb, yb, at.row)) blocked_row<false>(g, xb, yb, at.row);
      }
    });
    return Status::Ok();
  }
  // lane columns up to (ow + 7) * sw + (kw - 1) * dw must fit int32 (with the input width)
  const int64_t reach = (g.ow + 8) * g.sw + (g.kw - 1) * g.dw + g.pw;
  if (reach > INT32_MAX / 2 || g.w > INT32_MAX / 2) return p->run(ctx, in, n_in, out, n_out);
  const SepSizes sep(g);
  const bool separable = sep.fits(g);
  kernels::parallel_chunks(ctx.pool, g.n * g.c, 1, [&](int64_t p0, int64_t p1) {
    alignas(32) float buf[kSepFloats];
    for (int64_t q = p0; q < p1; ++q) {
      const float* xq = x + q * g.h * g.w;
      float* yq = y + q * g.oh * g.ow;
      if (!separable || !Separable(g, sep, buf).plane(xq, yq)) plane(g, xq, yq);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_LAYOUT_KERNEL(max_pool2d, DType::kFloat32, kernels::portable_infer<kOp>, run, layouts);
}  // namespace dtorch
