// The 3x3 depthwise convolutions of the avx512 kernel set (conv2d with one input and one output channel per group,
// 3x3, dilation 1, column stride 1 or 2, any row stride): the common depthwise convolution of MobileNets.
// Header-only, included by kernels/avx512/conv2d.cc only. (Other depthwise shapes run conv2d.cc's depthwise_plane.)
//
// Blocks of R output rows x NV vectors of 16 columns (R * NV <= kDwChains independent FMA chains) with the 9
// weights in registers. Each output starts at the bias and adds its taps in (row, column) order with one FMA each,
// skipping input rows outside the image and adding +0 (a masked-off load) for columns outside it: the order of
// depthwise_plane and of the avx2 set, so the bits are theirs. Stride 1 reads each tap column with one load;
// stride 2 loads 32 floats twice per input row and splits them into the even (tap columns 0, 2) and odd (column 1)
// floats. Blocks whose reads stay inside the input rows use plain loads; border blocks mask the lanes outside
// (AVX-512 masked loads never touch masked-off lanes).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/gemm_avx512.h"
#include "kernels/avx512/activation_avx512.h"
#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
namespace avx512 {

constexpr int kDwChains = 8;              // 8 accumulators + 9 weights + the loads: within 32 zmm
constexpr int kDwLoads = 4;               // loads per output vector and input row
constexpr int64_t kDwMaxVectors = 64;     // wider output rows run depthwise_plane

// Lanes e with 0 <= base + e < w.
inline __mmask16 inside_mask(int64_t base, int64_t w) {
  const int64_t lo = base >= 0 ? 0 : -base, hi = w - base;
  const int h = static_cast<int>(hi < 0 ? 0 : hi > 16 ? 16 : hi), l = static_cast<int>(lo > 16 ? 16 : lo);
  return static_cast<__mmask16>(mask16(h) & ~mask16(l));
}

// The masks of one output vector's loads (stride 1: tap columns 0, 1, 2; stride 2: floats [0, 16), [16, 32) of the
// row at its first input column and 2 further): lanes inside the input row. The same for every row and plane.
struct DwMasks {
  __mmask16 m[kDwLoads];
};

template <int SW>
void dw3x3_masks(const ConvGeometry& g, int64_t row_vecs, DwMasks* out) {
  for (int64_t v = 0; v < row_vecs; ++v) {
    const int64_t c = 16 * v * SW - g.pl;
    for (int l = 0; l < kDwLoads; ++l) {
      const int64_t off = SW == 1 ? l : (l & 1) * 16 + (l >> 1) * 2;
      out[v].m[l] = inside_mask(c + off, g.w);
    }
  }
}

template <bool MASKED>
DTORCH_AVX512_INLINE __m512 load16(const float* p, __mmask16 m) {
  return MASKED ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
}

// One block: output rows [oh0, oh0 + R) x vectors [v0, v0 + NV).
template <int SW, int R, int NV, bool MASKED>
DTORCH_AVX512_INLINE void dw3x3_block(const ConvGeometry& g, const float* xp, const __m512 (&wv)[9], __m512 bias,
                                      float* yp, int64_t oh0, int64_t v0, const DwMasks* mk) {
  const __m512i even = kernels::even_lanes();
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512 acc[R][NV];
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX512_UNROLL
    for (int v = 0; v < NV; ++v) acc[r][v] = bias;
  }
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX512_UNROLL
    for (int i = 0; i < 3; ++i) {
      const int64_t ih = (oh0 + r) * g.sh - g.pt + i;
      if (ih < 0 || ih >= g.h) continue;
      const float* row = xp + ih * g.w;
      DTORCH_AVX512_UNROLL
      for (int v = 0; v < NV; ++v) {
        const float* s = row + 16 * (v0 + v) * SW - g.pl;  // lane 0, tap column 0
        const DwMasks& m = mk[MASKED ? v0 + v : 0];
        __m512 t0, t1, t2;
        if (SW == 1) {
          t0 = load16<MASKED>(s, m.m[0]);
          t1 = load16<MASKED>(s + 1, m.m[1]);
          t2 = load16<MASKED>(s + 2, m.m[2]);
        } else {
          const __m512 lo = load16<MASKED>(s, m.m[0]), hi = load16<MASKED>(s + 16, m.m[1]);
          const __m512 lo2 = load16<MASKED>(s + 2, m.m[2]), hi2 = load16<MASKED>(s + 18, m.m[3]);
          t0 = _mm512_permutex2var_ps(lo, even, hi);
          t1 = _mm512_permutex2var_ps(lo, odd, hi);
          t2 = _mm512_permutex2var_ps(lo2, even, hi2);
        }
        acc[r][v] = _mm512_fmadd_ps(wv[3 * i], t0, acc[r][v]);
        acc[r][v] = _mm512_fmadd_ps(wv[3 * i + 1], t1, acc[r][v]);
        acc[r][v] = _mm512_fmadd_ps(wv[3 * i + 2], t2, acc[r][v]);
      }
    }
  }
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_AVX512_UNROLL
    for (int v = 0; v < NV; ++v) {
      const int64_t o = 16 * (v0 + v);
      const int nv = static_cast<int>(g.ow - o < 16 ? g.ow - o : 16);
      float* y = yp + (oh0 + r) * g.ow + o;
      bool done = false;
      const __m512 out = activate(g.act, acc[r][v], &done);
      _mm512_mask_storeu_ps(y, mask16(nv), out);
      if (!done) activate_rows(g.act, y, nv);
    }
  }
}

// Rows [oh_begin, oh_end) x vectors [v_begin, v_end) in R x NV blocks (both ranges are whole blocks). Vectors
// [v_lo, v_hi) read only inside the input rows; blocks with any other vector mask their loads.
template <int SW, int R, int NV>
void dw3x3_region(const ConvGeometry& g, const float* xp, const float* wc, float b, float* yp, int64_t oh_begin,
                  int64_t oh_end, int64_t v_begin, int64_t v_end, int64_t v_lo, int64_t v_hi, const DwMasks* mk) {
  __m512 wv[9];
  DTORCH_AVX512_UNROLL
  for (int t = 0; t < 9; ++t) wv[t] = _mm512_set1_ps(wc[t]);
  const __m512 bias = _mm512_set1_ps(b);
  for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += R) {
    for (int64_t v0 = v_begin; v0 < v_end; v0 += NV) {
      if (v0 >= v_lo && v0 + NV <= v_hi)
        dw3x3_block<SW, R, NV, false>(g, xp, wv, bias, yp, oh0, v0, mk);
      else
        dw3x3_block<SW, R, NV, true>(g, xp, wv, bias, yp, oh0, v0, mk);
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
    put<1, 1>(), put<1, 2>(), put<1, 3>(), put<1, 4>(), put<1, 5>(), put<1, 6>(), put<1, 7>(), put<1, 8>();
    put<2, 1>(), put<2, 2>(), put<2, 3>(), put<2, 4>();
    put<3, 1>(), put<3, 2>();
    put<4, 1>(), put<4, 2>();
    put<5, 1>(), put<6, 1>(), put<7, 1>(), put<8, 1>();
  }
};
static_assert(kDwChains == 8, "Dw3x3Table lists the blocks of up to 8 chains");

inline bool dw3x3_applies(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2) &&
         ceil_div(g.ow, 16) <= kDwMaxVectors;
}

// Planes [p_begin, p_end) of a node: blocks of as many vectors of a row as fit in kDwChains, then as many rows as
// fill them.
template <int SW>
void dw3x3_planes(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, int64_t p_begin,
                  int64_t p_end) {
  static const Dw3x3Table<SW> table;
  // reach: the last float a vector reads past its first input column (stride 1: lane 15 of tap column 2;
  // stride 2: the last float of the second 32-float load).
  const Dw3x3Plan plan = dw3x3_plan(g, 16, SW == 1 ? 17 : 33, kDwChains);
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

}  // namespace avx512
}  // namespace kernels
}  // namespace dtorch
