// The depthwise convolutions of the avx2 kernel set (conv2d with one input and one output channel per group).
// Header-only, included by kernels/avx2/conv2d.cc only.
//
// Direct kernels, 8 output columns per vector. Every output starts at its bias and adds its taps in (row, column)
// order with one FMA each, skipping input rows outside the image and adding +0 (a cleared lane) for columns
// outside it, so its bits depend only on the shapes (never on threads or blocking). Lanes outside the row are
// cleared after a plain load where it stays inside the plane (kernels/avx2/avx2.h load_lanes: masked loads are slow
// on AMD Zen 2), else masked off.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/activation_avx2.h"
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_fma.h"
#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
namespace avx2 {

// One output plane (image n, channel c), kDwRows output rows at a time (independent accumulator chains), 8 output
// columns per vector. Every output starts at the bias and adds its taps in (row, column) order, one FMA each, so
// its result does not depend on how rows are blocked. Stride 1: each tap is one load whose mask drops the
// positions outside the row (load_lanes). Stride 2: vectors inside the row load 15 floats
// and keep the even ones. Border vectors of other strides gather their valid positions.
constexpr int kDwRows = 4;

inline void depthwise_plane(const ConvGeometry& g, const float* xp, const float* wc, float b, float* yp) {
  const float* x_end = xp + g.h * g.w;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i W = _mm256_set1_epi32(static_cast<int32_t>(g.w));
  const __m256i lane_off = _mm256_mullo_epi32(lanes, _mm256_set1_epi32(static_cast<int32_t>(g.sw)));
  const __m256i zero_i = _mm256_setzero_si256();
  for (int64_t oh0 = 0; oh0 < g.oh; oh0 += kDwRows) {
    const int rows = static_cast<int>(g.oh - oh0 < kDwRows ? g.oh - oh0 : kDwRows);
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += 8) {
      const int nv = static_cast<int>(g.ow - ow0 < 8 ? g.ow - ow0 : 8);
      const __m256i mv = lane_mask(nv);
      __m256 acc[kDwRows];
      DTORCH_AVX2_UNROLL
      for (int r = 0; r < kDwRows; ++r) acc[r] = _mm256_set1_ps(b);
      for (int64_t i = 0; i < g.kh; ++i) {
        const float* wr = wc + i * g.kw;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t first = ow0 * g.sw - g.pl + j * g.dw, last = first + (nv - 1) * g.sw;
          const bool inside = first >= 0 && last < g.w;
          // How this tap's 8 positions are read (the same for every row of the block).
          __m256i m = mv, iw = zero_i;
          if (!inside || (g.sw != 1 && g.sw != 2)) {
            iw = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(first)), lane_off);
            const __m256i ok = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero_i, iw), _mm256_cmpgt_epi32(W, iw));
            m = _mm256_and_si256(m, ok);
          }
          const bool gather = g.sw != 1 && !(g.sw == 2 && inside);
          const int span = 2 * nv - 1;  // stride 2, inside: input floats the vector covers
          const __m256 wv = _mm256_set1_ps(wr[j]);
          DTORCH_AVX2_UNROLL
          for (int r = 0; r < kDwRows; ++r) {
            const int64_t ih = (oh0 + r) * g.sh - g.pt + i * g.dh;
            if (r >= rows || ih < 0 || ih >= g.h) continue;
            const float* row = xp + ih * g.w;
            __m256 v;
            if (gather) {
              v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, iw, _mm256_castsi256_ps(m), 4);
            } else if (g.sw == 1) {
              // lane l reads row[first + l]; lanes outside the row are cleared (or masked off, never read)
              v = load_lanes(row + first, m, xp, x_end);
            } else {
              const __m256 lo = load_lanes(row + first, lane_mask(span), xp, x_end);
              const __m256 hi = load_lanes(row + first + 8, lane_mask(span - 8), xp, x_end);
              v = even_floats(lo, hi);
            }
            acc[r] = _mm256_fmadd_ps(wv, v, acc[r]);
          }
        }
      }
      DTORCH_AVX2_UNROLL
      for (int r = 0; r < kDwRows; ++r) {
        if (r >= rows) continue;
        float* y = yp + (oh0 + r) * g.ow + ow0;
        bool done = false;
        const __m256 out = activate(g.act, acc[r], &done);
        store_lanes(y, out, nv);
        if (!done) activate_rows(g.act, y, nv);
      }
    }
  }
}

// 3x3, dilation 1, column stride 1 or 2 (any row stride): the common depthwise convolution. Blocks of R output
// rows x NV vectors of 8 columns (R * NV <= 6 independent FMA chains) with the 9 weights in registers: 6 + 9 of the
// 16 ymm registers, so inputs come as memory operands and nothing spills. Each output starts at the bias and adds
// its taps in (row, column) order, skipping input rows outside the image and adding +0 (a cleared lane) for
// columns outside it (the order depthwise_plane uses too). Stride 1 reads each tap
// column with one load; stride 2 loads 16 floats twice per input row and splits them into the even (columns 0, 2)
// and odd (column 1) taps. Blocks whose reads stay inside the input rows use plain loads; border blocks clear the
// lanes outside (load_lanes).
constexpr int kDwChains = 6;


// Lanes e with 0 <= base + e < w.
inline __m256i inside_mask(int64_t base, int64_t w) {
  const __m256i e = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(base)),
                                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), e),
                             _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)), e));
}

// The masks of one output vector's loads (stride 1: tap columns 0, 1, 2; stride 2: floats [0, 8), [8, 16) of the
// row at its first input column and 2 further): lanes inside the input row. The same for every row and plane.
constexpr int kDwLoads = 4;
constexpr int64_t kDwMaxVectors = 128;  // wider output rows run depthwise_plane
struct DwMasks {
  __m256i m[kDwLoads];
};

template <int SW>
void dw3x3_masks(const ConvGeometry& g, int64_t row_vecs, DwMasks* out) {
  for (int64_t v = 0; v < row_vecs; ++v) {
    const int64_t c = 8 * v * SW - g.pl;
    for (int l = 0; l < kDwLoads; ++l) {
      const int64_t off = SW == 1 ? l : (l & 1) * 8 + (l >> 1) * 2;
      out[v].m[l] = inside_mask(c + off, g.w);
    }
  }
}

// How a block reads: plain loads (every lane inside the input rows), plain loads with the lanes outside the row
// cleared (every load inside the plane: rows away from its first and last), or load_lanes (near the plane's ends).
enum class DwLoad { kPlain, kClear, kChecked };

template <DwLoad L>
DTORCH_AVX2_INLINE __m256 load8(const float* p, const __m256i& m, const float* lo, const float* hi) {
  if (L == DwLoad::kPlain) return _mm256_loadu_ps(p);
  if (L == DwLoad::kClear) return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(m));
  return load_lanes(p, m, lo, hi);
}

// One block: output rows [oh0, oh0 + R) x vectors [v0, v0 + NV).
template <int SW, int R, int NV, DwLoad L>
DTORCH_AVX2_INLINE void dw3x3_block(const ConvGeometry& g, const float* xp, const __m256 (&wv)[9], __m256 bias,
                                    float* yp, int64_t oh0, int64_t v0, const DwMasks* mk) {
  constexpr bool kMasked = L != DwLoad::kPlain;
  const float* x_end = xp + g.h * g.w;
  __m256 acc[R][NV];
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX2_UNROLL
    for (int v = 0; v < NV; ++v) acc[r][v] = bias;
  }
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX2_UNROLL
    for (int i = 0; i < 3; ++i) {
      const int64_t ih = (oh0 + r) * g.sh - g.pt + i;
      if (ih < 0 || ih >= g.h) continue;
      const float* row = xp + ih * g.w;
      DTORCH_AVX2_UNROLL
      for (int v = 0; v < NV; ++v) {
        const float* s = row + 8 * (v0 + v) * SW - g.pl;  // lane 0, tap column 0
        const DwMasks& m = mk[kMasked ? v0 + v : 0];
        __m256 t0, t1, t2;
        if (SW == 1) {
          t0 = load8<L>(s, m.m[0], xp, x_end);
          t1 = load8<L>(s + 1, m.m[1], xp, x_end);
          t2 = load8<L>(s + 2, m.m[2], xp, x_end);
        } else {
          const __m256 lo = load8<L>(s, m.m[0], xp, x_end), hi = load8<L>(s + 8, m.m[1], xp, x_end);
          const __m256 lo2 = load8<L>(s + 2, m.m[2], xp, x_end);
          const __m256 hi2 = load8<L>(s + 10, m.m[3], xp, x_end);
          t0 = even_floats(lo, hi);
          t1 = odd_floats(lo, hi);
          t2 = even_floats(lo2, hi2);
        }
        acc[r][v] = _mm256_fmadd_ps(wv[3 * i], t0, acc[r][v]);
        acc[r][v] = _mm256_fmadd_ps(wv[3 * i + 1], t1, acc[r][v]);
        acc[r][v] = _mm256_fmadd_ps(wv[3 * i + 2], t2, acc[r][v]);
      }
    }
  }
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX2_UNROLL
    for (int v = 0; v < NV; ++v) {
      const int64_t o = 8 * (v0 + v);
      const int nv = static_cast<int>(g.ow - o < 8 ? g.ow - o : 8);
      float* y = yp + (oh0 + r) * g.ow + o;
      bool done = false;
      const __m256 out = activate(g.act, acc[r][v], &done);
      store_lanes(y, out, nv);
      if (!done) activate_rows(g.act, y, nv);
    }
  }
}

// Rows [oh_begin, oh_end) x vectors [v_begin, v_end) in R x NV blocks (both ranges are whole blocks). Vectors
// [v_lo, v_hi) read only inside the input rows; blocks with any other vector mask their loads.
template <int SW, int R, int NV>
void dw3x3_region(const ConvGeometry& g, const float* xp, const float* wc, float b, float* yp, int64_t oh_begin,
                  int64_t oh_end, int64_t v_begin, int64_t v_end, int64_t v_lo, int64_t v_hi, const DwMasks* mk) {
  __m256 wv[9];
  DTORCH_AVX2_UNROLL
  for (int t = 0; t < 9; ++t) wv[t] = _mm256_set1_ps(wc[t]);
  const __m256 bias = _mm256_set1_ps(b);
  // Loads of a row start at most pl floats before it and end at most `reach` floats past its last vector's start.
  const int64_t before = g.pl, after = 8 * (v_end - 1) * SW - g.pl + (SW == 1 ? 10 : 18) - g.w;
  const int64_t rows_before = ceil_div(before, g.w), rows_after = after <= 0 ? 0 : ceil_div(after, g.w);
  for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += R) {
    // input rows [ih_lo, ih_hi] of the block; its loads stay in the plane when rows_before rows lie above the first
    // and rows_after below the last
    const int64_t ih_lo = oh0 * g.sh - g.pt, ih_hi = (oh0 + R - 1) * g.sh - g.pt + 2;
    const bool in_plane = ih_lo >= rows_before && ih_hi + rows_after <= g.h - 1;
    for (int64_t v0 = v_begin; v0 < v_end; v0 += NV) {
      if (v0 >= v_lo && v0 + NV <= v_hi)
        dw3x3_block<SW, R, NV, DwLoad::kPlain>(g, xp, wv, bias, yp, oh0, v0, mk);
      else if (in_plane)
        dw3x3_block<SW, R, NV, DwLoad::kClear>(g, xp, wv, bias, yp, oh0, v0, mk);
      else
        dw3x3_block<SW, R, NV, DwLoad::kChecked>(g, xp, wv, bias, yp, oh0, v0, mk);
    }
  }
}

using Dw3x3Fn = void (*)(const ConvGeometry&, const float*, const float*, float, float*, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, const DwMasks*);

// The region kernels by [rows - 1][vectors - 1] (null where rows * vectors > kDwChains).
template <int SW>
struct Dw3x3Table {
  Dw3x3Fn fn[kDwChains][kDwChains] = {};
  template <int R, int NV>
  void put() {
    fn[R - 1][NV - 1] = dw3x3_region<SW, R, NV>;
  }
  Dw3x3Table() {
    put<1, 1>(), put<1, 2>(), put<1, 3>(), put<1, 4>(), put<1, 5>(), put<1, 6>();
    put<2, 1>(), put<2, 2>(), put<2, 3>();
    put<3, 1>(), put<3, 2>();
    put<4, 1>(), put<5, 1>(), put<6, 1>();
  }
};
static_assert(kDwChains == 6, "Dw3x3Table lists the blocks of up to 6 chains");

inline bool dw3x3_applies(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2) &&
         ceil_div(g.ow, 8) <= kDwMaxVectors;
}

// Every plane of a node: blocks of as many vectors of a row as fit in kDwChains, then as many rows as fill them.
template <int SW>
void dw3x3_planes(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, int64_t p_begin,
                  int64_t p_end) {
  static const Dw3x3Table<SW> table;
  // reach: the last float a vector reads past its first input column (stride 1: lane 7 of tap column 2;
  // stride 2: the last float of the second 16-float load).
  const Dw3x3Plan plan = dw3x3_plan(g, 8, SW == 1 ? 9 : 17, kDwChains);
  DwMasks mk[kDwMaxVectors];
  dw3x3_masks<SW>(g, plan.row_vecs, mk);
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow, taps = 9;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t c = p % g.c;
    const float* xp = x + p * hw;
    const float* wc = w + c * taps;
    const float b = bias == nullptr ? 0.0f : bias[c];
    float* yp = y + p * ohw;
    dw3x3_regions(plan, g.oh, [&](int r, int nv, int64_t oh_b, int64_t oh_e, int64_t v_b, int64_t v_e) {
      table.fn[r - 1][nv - 1](g, xp, wc, b, yp, oh_b, oh_e, v_b, v_e, plan.v_lo, plan.v_hi, mk);
    });
  }
}

// A depthwise convolution (one input and one output channel per group) of every image: threads split the planes.
inline void depthwise(ThreadPool* pool, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      float* y) {
  const int64_t planes = g.n * g.c, hw = g.h * g.w, ohw = g.oh * g.ow, taps = g.kh * g.kw;
  parallel_chunks(pool, planes, 1, [&](int64_t b, int64_t e) {
    if (dw3x3_applies(g) && g.sw == 1) {
      dw3x3_planes<1>(g, x, w, bias, y, b, e);
    } else if (dw3x3_applies(g)) {
      dw3x3_planes<2>(g, x, w, bias, y, b, e);
    } else {
      for (int64_t p = b; p < e; ++p) {
        const int64_t c = p % g.c;
        depthwise_plane(g, x + p * hw, w + c * taps, bias == nullptr ? 0.0f : bias[c], y + p * ohw);
      }
    }
  });
}

}  // namespace avx2
}  // namespace kernels
}  // namespace dtorch
