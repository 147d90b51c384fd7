// conv2d, x86-64 AVX-512 kernel set (kernels/avx512/avx512.h: FMA, within 1e-5 x output scale of portable and
// eager; identical bits for any thread count).
//
// Dense and grouped convolutions (one or more input channels per group): per image and group, the FMA GEMM of
// kernels/avx512/gemm_avx512.h, weights (Og x Cg*kh*kw, packed once when the session loads: `prepare`; into
// scratch at run time when the weight is not a constant) times the im2col
// columns, which the GEMM's fill step gathers block by block (32 output positions x up to 256 kernel rows) into a
// buffer that stays in L1: the columns are never written to memory. Bias and the fused activation are applied in
// the GEMM (bias first, then the taps). A 1x1 stride-1 unpadded convolution reads B's rows in place from its input.
// Kernels of 2 or more taps with few output channels (stems, 32-128 channel layers) read B's rows in place from phase
// planes of the padded input, made once per image (`direct`): no per-panel fill, same bits.
// Convolutions with a long K (>= 192) and at least 32 output channels (ResNet's 3 x 3 layers, 1x1 projections) run
// channel-major instead: register tiles of up to 14 positions x 32 output channels, the packed weights read in place as
// vectors and each position's input broadcast from the input itself, a zero-padded copy or phase planes: nothing is
// packed per panel and no lane is spent on padding; the tile is transposed in registers into Y (channel_conv.h),
// same bits. Output rows of at most 7 positions pair up in one tile; weights are prefetched into L2 a panel ahead
// (they stream from memory when a model's weights exceed the cache).
// Small maps (7 x 7, 14 x 14), whose positions fill the tile's 32 columns badly, run the transposed product: output
// channels across the columns, the columns' transpose packed in 12-position panels, then Y^T transposed in
// registers into Y; the packed weights serve both orientations and the bits are the same (see `transposed`).
// Depthwise convolutions (one input channel per group, one output channel per group): direct kernels, 16 output
// columns per vector, taps in (row, column) order with one FMA each starting from the bias: for 3x3 undilated
// ones with column stride 1 or 2, blocks of up to 8 independent vectors with the weights in registers
// (kernels/avx512/depthwise_avx512.h); others 4 rows at a time with masked loads or gathers per tap
// (depthwise_plane). Small maps at stride 1 with OW = W (7 x 7) run 16 consecutive outputs per vector across output
// rows (DwFlat).
// Blocked layouts (core/kernel.h, NCHW16c): dense convolutions take a blocked X and/or write a blocked Y through the
// channel-major tiles (any K: a blocked Y needs no transposition), depthwise ones take X and Y blocked together
// (depthwise_blocked); `layouts` says which, and every combination gives the NCHW bits.
// Threads split GEMM work units or output planes only.
// Planes whose positions do not fit 32-bit gather indices run the best bit-exact kernel (x86 or portable), found through the registry.
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/depthwise_avx512.h"
#include "kernels/avx512/gemm_avx512.h"
#include "kernels/common/activation.h"
#include "kernels/common/channel_conv.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/fma_conv.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

namespace k5 = kernels::avx512;
using Geo = kernels::FmaConvGeometry;
using namespace kernels::channel_conv;  // NOLINT: PlaneLayout, ChannelSource, ... (kernels/common/channel_conv.h)

// --- dense / grouped: the im2col fill of the GEMM ---------------------------------------------------------

// Stores vector v of a fill's row d whose rows are ld floats apart: lanes [16 v, 16 v + 16) cut at ld (ld = kNR: a
// B block, 64-byte aligned; ld = kMR: a panel of the transposed product's cols^T).
inline void store_lanes(float* d, int64_t ld, int v, __m512 val) {
  if (ld == k5::kNR)
    _mm512_store_ps(d + 16 * v, val);
  else if (16 * v < ld)
    _mm512_mask_storeu_ps(d + 16 * v, k5::mask16(static_cast<int>(ld) - 16 * v), val);
}

// Columns of one image and group: B[r][q] for kernel row r = (c, i, j) and output position q = (oh, ow) is
// x[c][oh * sh - pt + i * dh][ow * sw - pl + j * dw], 0 outside the image.
//
// Column strides 1 and 2 go tap by tap (i, j): a panel's 32 positions fall into runs that share an output row, and
// for one tap the part of a run whose inputs lie inside the image reads consecutive floats of one input row
// (stride 1) or every other one (stride 2). Each 16-lane vector is then one masked load per run it meets (usually
// one; two or three where the panel crosses output rows); AVX-512 masked loads never touch masked-off lanes, so
// the loads need no bounds of their own. Where they start and which lanes they keep depends on the tap only: it
// is worked out once per tap and used for every input channel. Other strides gather. Both write the same values.
struct Im2col {
  const Geo* g;
  const float* x;   // the group's first input channel
  int64_t ld = k5::kNR;  // floats from one row of dst to the next: kNR (a B block), or kMR (a panel of the
                         // transposed product's A: then nr <= kMR and only lanes [0, kMR) are stored)

  static constexpr int kNR = k5::kNR, kNV = k5::kNR / 16;
  static constexpr int kMaxRuns = 6;  // runs per panel on the load path: output rows of at least 7 positions

  using Run = kernels::ConvRun;
  struct Load {       // one vector's load of one run, for one tap
    int64_t off;      // input offset (within a channel) where lane 0 would read
    __mmask16 m;      // kept lanes
  };

  const float* operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    Run runs[kMaxRuns];
    const int n_runs = kernels::conv_panel_runs(*g, j0, nr, runs, kMaxRuns);
    if (n_runs <= kMaxRuns && g->sw == 1)
      loads<1>(runs, n_runs, k0, kc, dst);
    else if (n_runs <= kMaxRuns && g->sw == 2)
      loads<2>(runs, n_runs, k0, kc, dst);
    else
      gather(j0, nr, k0, kc, dst);
    return dst;
  }

  void store(float* d, int v, __m512 val) const { store_lanes(d, ld, v, val); }

  template <int SW>
  void loads(const Run* runs, int n_runs, int64_t k0, int64_t kc, float* dst) const {
    const Geo& G = *g;
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;  // channels with rows in [k0, k0 + kc)
    const __m512i even = kernels::even_lanes();
    Load loads[kNV][kMaxRuns];  // per vector, the loads of the runs it meets
    int n_loads[kNV];
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / G.kw, j = t % G.kw;
      for (int v = 0; v < kNV; ++v) n_loads[v] = 0;
      for (int k = 0; k < n_runs; ++k) {
        int qa = 0, qb = 0;
        int64_t lane0 = 0, col0 = 0;
        if (!kernels::conv_run_tap<SW>(G, runs[k], i, j, &qa, &qb, &lane0, &col0)) continue;
        for (int v = qa / 16; v * 16 < qb; ++v) {
          Load& L = loads[v][n_loads[v]++];
          L.off = lane0 + 16 * v * SW;
          L.m = static_cast<__mmask16>(k5::mask16(qb - 16 * v) & ~k5::mask16(qa - 16 * v));
        }
      }
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        float* d = dst + r * ld;
        for (int v = 0; v < kNV; ++v) {
          __m512 out = _mm512_setzero_ps();
          for (int l = 0; l < n_loads[v]; ++l) {
            const Load& L = loads[v][l];
            const float* s = xc + L.off;
            if (SW == 1) {
              out = _mm512_mask_loadu_ps(out, L.m, s);
            } else {  // lane u reads float 2u of s[0 .. 32)
              const __m512 lo = _mm512_maskz_loadu_ps(spread_even(L.m), s);
              const __m512 hi = _mm512_maskz_loadu_ps(spread_even(static_cast<__mmask16>(L.m >> 8)), s + 16);
              out = _mm512_mask_mov_ps(out, L.m, _mm512_permutex2var_ps(lo, even, hi));
            }
          }
          store(d, v, out);
        }
      }
    }
  }

  // Bits [0, 8) of m moved to the even bits of 16: lane u of a stride-2 vector reads float 2u.
  static __mmask16 spread_even(__mmask16 m) {
    uint32_t b = m & 0xFFu;
    b = (b | (b << 4)) & 0x0F0Fu;
    b = (b | (b << 2)) & 0x3333u;
    b = (b | (b << 1)) & 0x5555u;
    return static_cast<__mmask16>(b);
  }

  // Other strides, and panels that cross more output rows than kMaxRuns: masked gathers.
  void gather(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const Geo& G = *g;
    alignas(64) int32_t ih0[kNR], iw0[kNR];
    for (int q = 0; q < kNR; ++q) {
      const int64_t p = j0 + (q < nr ? q : 0);
      ih0[q] = static_cast<int32_t>((p / G.ow) * G.sh - G.pt);
      iw0[q] = static_cast<int32_t>((p % G.ow) * G.sw - G.pl);
    }
    const __m512i h0a = _mm512_load_si512(ih0), h0b = _mm512_load_si512(ih0 + 16);
    const __m512i w0a = _mm512_load_si512(iw0), w0b = _mm512_load_si512(iw0 + 16);
    const __m512i H = _mm512_set1_epi32(static_cast<int32_t>(G.h)), W = _mm512_set1_epi32(static_cast<int32_t>(G.w));
    const __mmask16 na = k5::mask16(nr), nb = k5::mask16(nr - 16);
    int64_t j = k0 % G.kw, i = (k0 / G.kw) % G.kh, c = k0 / (G.kw * G.kh);
    for (int64_t r = 0; r < kc; ++r) {
      const float* xc = x + c * G.h * G.w;
      const __m512i di = _mm512_set1_epi32(static_cast<int32_t>(i * G.dh)),
                    dj = _mm512_set1_epi32(static_cast<int32_t>(j * G.dw));
      const __m512i iha = _mm512_add_epi32(h0a, di), ihb = _mm512_add_epi32(h0b, di);
      const __m512i iwa = _mm512_add_epi32(w0a, dj), iwb = _mm512_add_epi32(w0b, dj);
      // unsigned compares: negative positions are out of range too
      const __mmask16 ma = na & _mm512_cmplt_epu32_mask(iha, H) & _mm512_cmplt_epu32_mask(iwa, W);
      const __mmask16 mb = nb & _mm512_cmplt_epu32_mask(ihb, H) & _mm512_cmplt_epu32_mask(iwb, W);
      const __m512i ia = _mm512_add_epi32(_mm512_mullo_epi32(iha, W), iwa);
      const __m512i ib = _mm512_add_epi32(_mm512_mullo_epi32(ihb, W), iwb);
      float* d = dst + r * ld;
      store(d, 0, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ma, ia, xc, 4));
      store(d, 1, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mb, ib, xc, 4));
      if (++j == G.kw) {
        j = 0;
        if (++i == G.kh) {
          i = 0;
          ++c;
        }
      }
    }
  }
};

// 1x1, stride 1, no padding: B[r][q] = x[r][q] (the input plane is the column matrix). A GEMM's whole panels read the
// input rows in place (no copy: the block's rows are H * W floats apart); the last, partial one is copied, zero past
// nr, as the transposed product's panels (ld = kMR).
struct Rows {
  const float* x;
  int64_t hw;             // H * W
  int64_t ld = k5::kNR;   // as Im2col::ld
  k5::StridedRows operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    if (ld == k5::kNR && nr == k5::kNR) return k5::StridedRows{x + k0 * hw + j0, hw};
    const __mmask16 ma = k5::mask16(nr), mb = k5::mask16(nr - 16);
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = x + (k0 + r) * hw + j0;
      store_lanes(dst + r * ld, ld, 0, _mm512_maskz_loadu_ps(ma, s));
      store_lanes(dst + r * ld, ld, 1, _mm512_maskz_loadu_ps(mb, s + 16));
    }
    return k5::StridedRows{dst, k5::kNR};  // (ld = kMR: the caller reads dst)
  }
};

// Weights (Og x Cg*kh*kw per group) are packed in panels of kNR = 32 output channels, k-major, which serves both
// orientations of the GEMM: as its A (Y = W . cols, tiles of 12, 12 and 8 rows per panel) and as its B (the
// transposed product Y^T = cols^T . W^T, the panel's 32 channels across the register tile's columns).
constexpr int64_t kWP = k5::kNR;

// --- dense / grouped: B from phase planes -----------------------------------------------------------------

// The im2col fill above works out every tap's runs and masks and, at stride 2, spreads each vector over two masked
// loads and a permute; it runs once per 32-position panel and K block, and with few output channels (stems, 32-128
// channel layers) that is a large share of the convolution. Instead, each image and group's input is copied once
// with its padding into phase planes (stride sh x sw: sh * sw planes per channel, plane (a, b) holding padded rows
// a, a + sh, ... and columns b, b + sw, ...), each hp rows of wp floats. Output position (oh, ow) then reads tap
// (c, i, j) at plane(c, i*dh % sh, j*dw % sw) + (oh + i*dh / sh) * wp + ow + j*dw / sw: with the flat position
// q = oh * wp + ow, B[k][q] = xp[off[k] + q], so a B block's row is 32 consecutive floats of the planes, which the
// tiles read where they are (PlaneRows). Positions with q % wp >= OW are padding: computed and never stored (the tile compresses its
// lanes into the output row, Cols). Products, their order and the +0.0f padding are the fill's: the same bits.
//
struct DirectPlan {
  PlaneLayout l;  // the phase planes
  int64_t q;      // flat output positions: (OH - 1) * wp + OW

  explicit DirectPlan(const Geo& g)
      : l(phase_planes(g)),
        q((g.oh - 1) * l.wp + g.ow) {}
  int64_t floats(const Geo& g) const { return off_floats(g) + g.cg * l.chan(); }
};

// Whether the planes pay: they save the fill's work per panel and K block, which every output channel's tiles
// share, and cost the padded positions' lanes ((wp - OW) per output row). Measured on this set's Zen 4 (3 x 3 and
// 7 x 7 stems, 3 x 3 convolutions at 32-128 channels, stride 1 and 2): the fill is worth about 6 output channels'
// products, so the planes are taken when the extra lanes cost less than that. 1x1 convolutions keep their row
// copies (stride 1: Rows) or the fill (strided: it touches a quarter of the input only).
bool direct(const Geo& g) {
  if (g.kh * g.kw == 1) return false;
  const DirectPlan d(g);
  const int64_t lanes = kernels::ceil_div(d.q, k5::kNR), normal = kernels::ceil_div(g.oh * g.ow, k5::kNR);
  return lanes * g.og <= normal * (g.og + 6);
}

// One padded row of column phase b of layout l: dst[u] = x[u * l.sw + b - pl] (x: the input row), 0 outside [0, w).
void copy_phase_row(const Geo& g, const PlaneLayout& l, const float* x, int64_t b, float* dst) {
  const int64_t sw = l.sw, wp = l.wp;
  const int64_t lo = g.pl - b;  // u * sw >= lo and u * sw < lo + w
  int64_t u0 = lo <= 0 ? 0 : kernels::ceil_div(lo, sw);
  int64_t u1 = lo + g.w <= 0 ? 0 : kernels::ceil_div(lo + g.w, sw);
  u0 = u0 < wp ? u0 : wp;
  u1 = u1 < wp ? (u1 < u0 ? u0 : u1) : wp;
  for (int64_t u = 0; u < u0; ++u) dst[u] = 0.0f;
  for (int64_t u = u1; u < wp; ++u) dst[u] = 0.0f;
  const float* s = x + u0 * sw + b - g.pl;
  int64_t u = u0;
  if (sw == 1) {
    for (; u + 16 <= u1; u += 16, s += 16) _mm512_storeu_ps(dst + u, _mm512_loadu_ps(s));
    const __mmask16 m = k5::mask16(static_cast<int>(u1 - u));
    _mm512_mask_storeu_ps(dst + u, m, _mm512_maskz_loadu_ps(m, s));
  } else if (sw == 2) {
    const __m512i even = kernels::even_lanes();
    for (; u < u1; u += 16, s += 32) {
      const int n = static_cast<int>(u1 - u < 16 ? u1 - u : 16), span = 2 * n - 1;  // floats lane n - 1 reaches
      const __m512 lo_v = _mm512_maskz_loadu_ps(k5::mask16(span), s);
      const __m512 hi_v = _mm512_maskz_loadu_ps(k5::mask16(span - 16), s + 16);
      _mm512_mask_storeu_ps(dst + u, k5::mask16(n), _mm512_permutex2var_ps(lo_v, even, hi_v));
    }
  } else {
    for (; u < u1; ++u, s += sw) dst[u] = *s;
  }
}

// This set's pieces of kernels/common/channel_conv.h: 14 positions x 32 output channels per tile (see channel_tile).
struct Tiles {
  static constexpr int64_t kNR = k5::kNR;
  static constexpr int kCR = 14;
  static void copy_phase_row(const Geo& g, const PlaneLayout& l, const float* x, int64_t b, float* dst) {
    ::dtorch::copy_phase_row(g, l, x, b, dst);
  }
  static ChannelTileFn pick(bool yb, int64_t ps, int noc, int mr);
  static constexpr int64_t kDwBlockedTaps = 49;  // weights of kernels up to 7 x 7 kept per channel block
  static void depthwise_blocked(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias,
                                float* y);
};
using Channel = ChannelConv<Tiles>;

// A B block from the planes: row r is the 32 floats at base + off[k0 + r] + j0, read in place for whole panels
// (nothing copied); a partial last panel is copied, 0 past nr (the planes end at its last position).
struct BufOffsets {  // row r of a fill's buffer: r * kNR
  int64_t v[k5::kKC];
  constexpr BufOffsets() : v() {
    for (int64_t r = 0; r < k5::kKC; ++r) v[r] = r * k5::kNR;
  }
};
constexpr BufOffsets kBufOffsets{};

struct PlaneRows {
  const float* base;
  const int64_t* off;
  k5::IndexedRows operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    if (nr == k5::kNR) return k5::IndexedRows{base + j0, off + k0};
    const __mmask16 ma = k5::mask16(nr), mb = k5::mask16(nr - 16);
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = base + off[k0 + r] + j0;
      _mm512_store_ps(dst + r * k5::kNR, _mm512_maskz_loadu_ps(ma, s));
      _mm512_store_ps(dst + r * k5::kNR + 16, _mm512_maskz_loadu_ps(mb, s + 16));
    }
    return k5::IndexedRows{dst, kBufOffsets.v};
  }
};

// Where a tile's flat positions [j0, j0 + nr) go in the output plane: the lanes with q % wp < OW, side by side
// from the first one's output position on.
k5::Cols direct_cols(const Geo& g, const DirectPlan& d, int64_t j0, int nr) {
  k5::Cols c;
  int64_t oh = j0 / d.l.wp, ow = j0 % d.l.wp;
  for (int v = 0; v < 2; ++v) {
    uint32_t m = 0;
    int64_t at = 0;
    for (int l = 0; l < 16; ++l) {
      if (16 * v + l < nr && ow < g.ow) {
        if (m == 0) at = oh * g.ow + ow;
        m |= 1u << l;
      }
      if (++ow == d.l.wp) {
        ow = 0;
        ++oh;
      }
    }
    c.at[v] = at;
    c.m[v] = static_cast<__mmask16>(m);
    c.sm[v] = k5::mask16(__builtin_popcount(m));
  }
  c.packed = c.m[0] != c.sm[0] || c.m[1] != c.sm[1];  // gaps only where a panel crosses an output row
  return c;
}

// One image and group: the planes, then Y = W . B with B's rows read from them.
void direct_gemm(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, const kernels::Epilogue& ep,
                 float* yg, float* work) {
  const DirectPlan d(g);
  int64_t* off = reinterpret_cast<int64_t*>(work);
  float* xp = work + off_floats(g);
  Channel::copy_phases(pool, g, d.l, xg, xp);
  plane_offsets(g, d.l, off);
  k5::gemm(pool, g.og, d.q, g.cg * g.kh * g.kw, wg, kWP, PlaneRows{xp, off},
           [&](int64_t j0, int nr) { return direct_cols(g, d, j0, nr); }, yg, g.oh * g.ow, ep);
}

// The transposed product's B: the packed weights themselves (kNR-row panels, k-major, read as K x kNR blocks).
struct Panels {
  const float* wp;  // the group's packed weights
  int64_t K;
  const float* operator()(int64_t j0, int, int64_t k0, int64_t, float*) const { return wp + j0 * K + k0 * k5::kNR; }
};

// Which orientation: the register tile's 32 columns run over output positions (Y = W . cols) or, when that
// wastes more lanes (7 x 7 and 14 x 14 maps: 49 positions fill 64 lanes), over output channels (Y^T = cols^T . W^T
// into scratch, then transposed). Both start each output at its bias and add the same products in the same
// order with one FMA each (a fused multiply-add does not depend on the order of its factors): identical bits.
bool transposed(const Geo& g) {
  const int64_t ohw = g.oh * g.ow;
  const int64_t normal = kernels::ceil_div(ohw, k5::kNR) * k5::kNR * g.og;  // tile lanes computed
  const int64_t swapped = kernels::ceil_div(g.og, k5::kNR) * k5::kNR * ohw;
  // It pays for packing cols^T and the transposition: a 1x1 convolution, whose normal columns are plain row
  // copies and whose K is small, needs a larger saving (MobileNetV2's 14 x 14 expansions measured slower at 0.875).
  return 10 * swapped < (g.pointwise ? 8 : 9) * normal;
}

// Scratch of the transposed product: cols^T packed in kMR-row panels (pack_a's layout), then Y^T (OH*OW x Og).
int64_t cols_t_floats(const Geo& g) {
  return kernels::ceil_div(k5::packed_a_floats(g.oh * g.ow, g.cg * g.kh * g.kw, k5::kMR), 16) * 16;
}

// r[i] = row i of a 16 x 16 block; after: r[i] = its column i. (The all-lanes mask forms: GCC 12's plain forms
// expand _mm512_undefined_ps, which trips -Wmaybe-uninitialized under -Werror.)
DTORCH_AVX512_INLINE void transpose16(__m512 (&r)[16]) {
  constexpr __mmask16 kAll = 0xFFFF;
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_mask_unpacklo_ps(r[2 * i], kAll, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_mask_unpackhi_ps(r[2 * i], kAll, r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_mask_shuffle_ps(t[4 * i], kAll, t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_mask_shuffle_ps(t[4 * i], kAll, t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_mask_shuffle_ps(t[4 * i + 1], kAll, t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_mask_shuffle_ps(t[4 * i + 1], kAll, t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_mask_shuffle_f32x4(r[8 * h + i], kAll, r[8 * h + i], r[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_mask_shuffle_f32x4(r[8 * h + i], kAll, r[8 * h + i], r[8 * h + 4 + i], 0xDD);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_mask_shuffle_f32x4(t[i], kAll, t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_mask_shuffle_f32x4(t[i], kAll, t[i], t[8 + i], 0xDD);
  }
}

// Y^T (ohw x og, row-major) into Y (og x ohw), in 16 x 16 blocks transposed in registers.
void transpose_out(ThreadPool* pool, const float* yt, int64_t ohw, int64_t og, float* y) {
  const int64_t blocks = kernels::ceil_div(og, 16);
  kernels::parallel_chunks(pool, blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t ob = b; ob < e; ++ob) {
      const int64_t o0 = ob * 16;
      const int no = static_cast<int>(og - o0 < 16 ? og - o0 : 16);
      const __mmask16 mo = k5::mask16(no);
      for (int64_t p0 = 0; p0 < ohw; p0 += 16) {
        const int np = static_cast<int>(ohw - p0 < 16 ? ohw - p0 : 16);
        __m512 r[16];
        for (int i = 0; i < 16; ++i)
          r[i] = i < np ? _mm512_maskz_loadu_ps(mo, yt + (p0 + i) * og + o0) : _mm512_setzero_ps();
        transpose16(r);
        const __mmask16 mp = k5::mask16(np);
        for (int j = 0; j < no; ++j) _mm512_mask_storeu_ps(y + (o0 + j) * ohw + p0, mp, r[j]);
      }
    }
  });
}

// --- dense / grouped: output channels across the vectors, positions broadcast in place ---------------------
//
// The GEMM above puts output positions across its vectors, so B (the input) must be gathered into blocks first
// (the fill or the plane copy) and the last panel of each plane, or the planes' padded columns, waste lanes. Turned
// around, a register tile is kCR positions x 32 output channels: the packed weights' panels (k-major, 32 channels
// per k) are its vectors, read in place, and each position's input is one broadcast: position r of a tile reads
// src[off[k] + at + r * SW], so nothing is packed. The source is the input itself when there is no padding, else a
// zero-padded copy of it (column strides 1 and 2), or phase planes (other column strides: SW = 1 in the planes).
// Tiles run along one output row (or, for a 1x1 stride-1 unpadded convolution, along the flat plane), then
// transpose in registers to store 32 channels x kCR positions into Y. Each output starts at its bias and adds its
// products (padding taps as +0.0f products, as the fill) in the same k order with one FMA each, over all of K in one
// chain: the same bits as the GEMM.
constexpr int kCR = Tiles::kCR;  // positions per tile

// One tile: positions [0, MR) at a + off[k] + r * PS (PS: floats from one position's input to the next: the column
// stride in an NCHW source, 16 x it in a blocked one) for r < MR / 2 and at a2 + off[k] + (r - MR / 2) * PS for the
// rest (a2 = a + MR / 2 * PS along one row; two output rows' halves otherwise, see channel_gemm), channels [0, noc)
// of the panel b (K x 32, k-major). Y is NCHW
// (YB false: the tile is transposed in registers and stored as noc rows of MR positions, rows ohw floats apart) or
// blocked (YB: each position's 16 channels are one store; y is the panel's first 16-channel block at the tile's first
// position, the second block ohw * 16 floats further).
template <int MR, int PS, bool YB, int NV>
void channel_tile(int64_t K, const float* a, const float* a2, const int64_t* off, const float* b, const float* pf,
                  const float* bias, int noc, const kernels::Activation& act, float* y, float* y2, int64_t ohw) {
  constexpr int H = MR / 2;
  static_assert(NV == 1 || NV == 2, "one or two vectors of output channels");
  __m512 c0[MR], c1[MR];  // channels [0, 16) and [16, 32) of each position (c1 unused when NV = 1)
  const __m512 b0 = bias == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k5::mask16(noc), bias);
  const __m512 b1 = bias == nullptr || NV == 1 ? _mm512_setzero_ps()
                                               : _mm512_maskz_loadu_ps(k5::mask16(noc - 16), bias + 16);
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < MR; ++r) {
    c0[r] = b0;
    c1[r] = b1;
  }
  // Unrolled by 4, which spreads the loop's own work (off[k], the prefetch, the pointer steps, the branch) over more
  // FMAs: Intel AVX-512 VM, same bits: SimpleNet's 3x3 stride-2 layers 0.728 -> 0.714 and 0.706 -> 0.695 ms,
  // ResNet-18 22.8-23.2 -> 22.1-22.7 ms at 1 thread.
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    const float* ak = a + off[k];
    const float* ak2 = a2 + off[k];
    _mm_prefetch(reinterpret_cast<const char*>(pf + 16 * k), _MM_HINT_T1);
    const __m512 w0 = _mm512_load_ps(b);
    const __m512 w1 = NV == 2 ? _mm512_load_ps(b + 16) : w0;
    DTORCH_AVX512_UNROLL
    for (int r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(r < H ? ak[r * PS] : ak2[(r - H) * PS]);
      c0[r] = _mm512_fmadd_ps(x, w0, c0[r]);
      if (NV == 2) c1[r] = _mm512_fmadd_ps(x, w1, c1[r]);
    }
    b += k5::kNR;
  }
  if constexpr (YB) {  // blocked Y: noc is 16 or 32 (its channel count is a multiple of 16)
    // Activations the registers cannot apply (done false: the same for every vector) run over the stored rows
    // afterwards, once no accumulator is live (a call inside the stores would spill them all).
    bool done = false;
    const int64_t next = ohw * kLayoutBlock;  // the second 16-channel block
    const bool two = NV == 2 && noc > 16;
    auto at = [&](int r) { return r < H ? y + r * kLayoutBlock : y2 + (r - H) * kLayoutBlock; };
    DTORCH_AVX512_UNROLL
    for (int r = 0; r < MR; ++r) _mm512_storeu_ps(at(r), k5::activate(act, c0[r], &done));
    if (two) {
      DTORCH_AVX512_UNROLL
      for (int r = 0; r < MR; ++r) _mm512_storeu_ps(at(r) + next, k5::activate(act, c1[r], &done));
    }
    if (!done) {
      for (int v = 0; v < (two ? 2 : 1); ++v) {
        k5::activate_rows(act, y + v * next, H * kLayoutBlock);
        k5::activate_rows(act, y2 + v * next, (MR - H) * kLayoutBlock);
      }
    }
  } else {
    // Lanes [0, H) to y's rows and [H, MR) to y2's: one store when y2 follows y's first half.
    const bool one = y2 == y + H;
    const __mmask16 mp = k5::mask16(one ? MR : H), m2 = static_cast<__mmask16>(k5::mask16(MR) & ~k5::mask16(H));
    const __m512i down = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(H));  // lane l takes lane l + H
    for (int v = 0; v < NV; ++v) {
      const int n = noc - 16 * v;
      if (n <= 0) break;
      __m512 t[16];
      DTORCH_AVX512_UNROLL
      for (int r = 0; r < 16; ++r) t[r] = r < MR ? (v == 0 ? c0[r] : c1[r]) : _mm512_setzero_ps();
      transpose16(t);
      for (int j = 0; j < 16 && j < n; ++j) {
        float* row = y + (16 * v + j) * ohw;
        bool done = false;
        const __m512 out = k5::activate(act, t[j], &done);
        _mm512_mask_storeu_ps(row, mp, out);
        if (!one) {
          float* row2 = y2 + (16 * v + j) * ohw;
          const __m512 shifted = _mm512_maskz_permutexvar_ps(__mmask16{0xFFFF}, down, out);
          _mm512_mask_storeu_ps(row2, static_cast<__mmask16>(m2 >> H), shifted);
          if (!done) k5::activate_rows(act, row2, MR - H);
        }
        if (!done) k5::activate_rows(act, row, one ? MR : H);
      }
    }
  }
}

template <int PS, bool YB, int NV>
ChannelTileFn channel_tile_for(int mr) {
  static constexpr ChannelTileFn kTiles[kCR] = {
      channel_tile<1, PS, YB, NV>, channel_tile<2, PS, YB, NV>, channel_tile<3, PS, YB, NV>,
      channel_tile<4, PS, YB, NV>, channel_tile<5, PS, YB, NV>, channel_tile<6, PS, YB, NV>,
      channel_tile<7, PS, YB, NV>, channel_tile<8, PS, YB, NV>, channel_tile<9, PS, YB, NV>,
      channel_tile<10, PS, YB, NV>, channel_tile<11, PS, YB, NV>, channel_tile<12, PS, YB, NV>,
      channel_tile<13, PS, YB, NV>, channel_tile<14, PS, YB, NV>};
  return kTiles[mr - 1];
}
static_assert(kCR == 14, "channel_tile_for lists 1..14 positions");

// The tile for a position stride of ps floats (1, 2: NCHW sources; 16, 32: blocked ones), Y's layout and, for a
// blocked Y, the panel's channels (16: one accumulator vector per position, no FMA on the panel's zero half).
template <bool YB, int NV>
ChannelTileFn channel_tile_nv(int64_t ps, int mr) {
  switch (ps) {
    case 1: return channel_tile_for<1, YB, NV>(mr);
    case 2: return channel_tile_for<2, YB, NV>(mr);
    case kLayoutBlock: return channel_tile_for<kLayoutBlock, YB, NV>(mr);
    default: return channel_tile_for<2 * kLayoutBlock, YB, NV>(mr);
  }
}
ChannelTileFn Tiles::pick(bool yb, int64_t ps, int noc, int mr) {
  if (!yb) return channel_tile_nv<false, 2>(ps, mr);
  return noc <= 16 ? channel_tile_nv<true, 1>(ps, mr) : channel_tile_nv<true, 2>(ps, mr);
}

// Whether a convolution runs channel-major: at least one full panel of output channels (fewer waste its lanes), and
// a K long enough that a tile's transposition and its 32 short row stores are a small part of it. Measured on this
// set's Zen 4 against the GEMM above (same bits): 3 x 3 convolutions with 64-512 channels 0.91-0.95x, stride 2
// 0.92-0.97x, 1x1 projections with K = 320-576 0.86-0.98x; K = 32-160 (stems, 1x1 expansions, 1x1 stride-2
// shortcuts read in place) 1.0-1.6x.
bool channel_major(const Geo& g) { return g.og >= k5::kNR && g.cg * g.kh * g.kw >= 192; }

// One image and group: the normal orientation, or the transposed one into `work` (cols^T, then Y^T).
void gemm_one_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                    float* yg, float* work) {
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  if (channel_major(g)) {
    Channel::run(pool, g, wg, xg, ep.bias, ep.act, yg, work);
    return;
  }
  const bool swap = transposed(g);
  ep.bias_per_row = !swap;
  if (!swap) {
    if (direct(g))
      direct_gemm(pool, g, wg, xg, ep, yg, work);
    else if (g.pointwise)
      k5::gemm(pool, g.og, ohw, kg, wg, kWP, Rows{xg, ohw}, yg, ohw, ep);
    else
      k5::gemm(pool, g.og, ohw, kg, wg, kWP, Im2col{&g, xg}, yg, ohw, ep);
    return;
  }
  float* cols_t = work;
  float* yt = cols_t + cols_t_floats(g);
  // cols^T in panels of kMR positions: the fills write each panel's rows kMR floats apart.
  const int64_t tiles = kernels::ceil_div(ohw, k5::kMR);
  kernels::parallel_chunks(pool, tiles, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t j0 = t * k5::kMR;
      const int nr = static_cast<int>(ohw - j0 < k5::kMR ? ohw - j0 : k5::kMR);
      float* dst = cols_t + t * k5::kMR * kg;
      if (g.pointwise)
        Rows{xg, ohw, k5::kMR}(j0, nr, 0, kg, dst);
      else
        Im2col{&g, xg, k5::kMR}(j0, nr, 0, kg, dst);
    }
  });
  k5::gemm(pool, ohw, g.og, kg, cols_t, k5::kMR, Panels{wg, kg}, yt, g.og, ep);
  transpose_out(pool, yt, ohw, g.og, yg);
}

// --- depthwise -------------------------------------------------------------------------------------------

// One output plane (image n, channel c), kDwRows output rows at a time (independent accumulator chains), 16 output
// columns per vector. Every output starts at the bias and adds its taps in (row, column) order, one FMA each, so
// its result does not depend on how rows are blocked. Stride 1: each tap is one masked load whose mask drops the
// positions outside the row (AVX-512 masked loads never touch masked-off lanes). Stride 2: interior vectors load 31
// floats and keep the even ones. Border vectors of other strides gather their valid positions.
constexpr int kDwRows = 4;

void depthwise_plane(const Geo& g, const float* xp, const float* wc, float b, float* yp) {
  const __m512i even = kernels::even_lanes();
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i W = _mm512_set1_epi32(static_cast<int32_t>(g.w));
  const __m512i lane_off = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int32_t>(g.sw)));
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t oh0 = 0; oh0 < g.oh; oh0 += kDwRows) {
    const int rows = static_cast<int>(g.oh - oh0 < kDwRows ? g.oh - oh0 : kDwRows);
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += 16) {
      const int nv = static_cast<int>(g.ow - ow0 < 16 ? g.ow - ow0 : 16);
      const __mmask16 mv = k5::mask16(nv);
      __m512 acc[kDwRows];
      DTORCH_AVX512_UNROLL
      for (int r = 0; r < kDwRows; ++r) acc[r] = _mm512_set1_ps(b);
      for (int64_t i = 0; i < g.kh; ++i) {
        const float* wr = wc + i * g.kw;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t first = ow0 * g.sw - g.pl + j * g.dw, last = first + (nv - 1) * g.sw;
          const bool inside = first >= 0 && last < g.w;
          // How this tap's 16 positions are read (the same for every row of the block).
          __mmask16 m = mv;
          __m512i iw = _mm512_setzero_si512();
          if (g.sw == 1 && !inside) {
            m &= _mm512_cmplt_epu32_mask(_mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(first)), lanes), W);
          } else if (!(g.sw == 2 && inside) && g.sw != 1) {
            iw = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(first)), lane_off);
            m &= _mm512_cmplt_epu32_mask(iw, W);
          }
          const int span = 2 * nv - 1;  // stride 2, inside: input floats the vector covers
          const __m512 wv = _mm512_set1_ps(wr[j]);
          DTORCH_AVX512_UNROLL
          for (int r = 0; r < kDwRows; ++r) {
            const int64_t ih = (oh0 + r) * g.sh - g.pt + i * g.dh;
            if (r >= rows || ih < 0 || ih >= g.h) continue;
            const float* row = xp + ih * g.w;
            __m512 v;
            if (g.sw == 1) {
              v = _mm512_maskz_loadu_ps(m, row + first);
            } else if (g.sw == 2 && inside) {
              const __m512 lo = _mm512_maskz_loadu_ps(k5::mask16(span), row + first);
              const __m512 hi = span > 16 ? _mm512_maskz_loadu_ps(k5::mask16(span - 16), row + first + 16) : zero;
              v = _mm512_permutex2var_ps(lo, even, hi);
            } else {
              v = _mm512_mask_i32gather_ps(zero, m, iw, row, 4);
            }
            acc[r] = _mm512_fmadd_ps(wv, v, acc[r]);
          }
        }
      }
      DTORCH_AVX512_UNROLL
      for (int r = 0; r < kDwRows; ++r) {
        if (r >= rows) continue;
        float* y = yp + (oh0 + r) * g.ow + ow0;
        bool done = false;
        const __m512 out = k5::activate(g.act, acc[r], &done);
        _mm512_mask_storeu_ps(y, mv, out);
        if (!done) k5::activate_rows(g.act, y, nv);
      }
    }
  }
}

// Small maps (output rows of at most 8 positions: MobileNets' 7 x 7 stage) waste most of a vector when each output
// row takes its own (7 of 16 lanes). At stride 1 with OW = W ("same" padding) the input index of tap (i, j) of output
// q = oh * OW + ow is q + (i * dh - pt) * W + j * dw - pl, linear in q: so 16 consecutive outputs, across output
// rows, take each tap with one load, whose lanes outside the input's columns (and rows) are masked to 0. Each output
// starts at its bias and adds its taps in (row, column) order with one FMA each, columns outside the image as +0
// products and rows outside it skipped (FMAs masked per lane by its output row): depthwise_plane's order, products and
// skips, so its bits.
constexpr int kDwFlatVecs = 16;  // outputs per plane: at most 256
constexpr int kDwFlatTaps = 8;   // kernel rows and columns

struct DwFlat {
  int nv;                                    // vectors per plane
  __mmask16 rows[kDwFlatVecs][kDwFlatTaps];  // lanes (outputs) whose kernel row i lies inside the image
  __mmask16 cols[kDwFlatVecs][kDwFlatTaps];  // lanes whose kernel column j lies inside the image
  __mmask16 out[kDwFlatVecs];                // lanes that are outputs

  static bool applies(const Geo& g) {
    return g.sh == 1 && g.sw == 1 && g.ow == g.w && g.ow <= 8 && g.oh * g.ow <= 16 * kDwFlatVecs &&
           g.kh <= kDwFlatTaps && g.kw <= kDwFlatTaps;
  }
  explicit DwFlat(const Geo& g) : nv(static_cast<int>(kernels::ceil_div(g.oh * g.ow, 16))) {
    for (int v = 0; v < nv; ++v) {
      out[v] = k5::mask16(static_cast<int>(g.oh * g.ow - 16 * v));
      for (int64_t t = 0; t < kDwFlatTaps; ++t) rows[v][t] = cols[v][t] = 0;
      for (int l = 0; l < 16 && 16 * v + l < g.oh * g.ow; ++l) {
        const int64_t oh = (16 * v + l) / g.ow, ow = (16 * v + l) % g.ow;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t ih = oh - g.pt + i * g.dh;
          if (ih >= 0 && ih < g.h) rows[v][i] = static_cast<__mmask16>(rows[v][i] | (1u << l));
        }
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t iw = ow - g.pl + j * g.dw;
          if (iw >= 0 && iw < g.w) cols[v][j] = static_cast<__mmask16>(cols[v][j] | (1u << l));
        }
      }
    }
  }

  // KH, KW: the kernel's size when known at compile time (3 x 3), else 0 (g's).
  template <int KH, int KW>
  void plane(const Geo& g, const float* xp, const float* wc, float b, float* yp) const {
    const int64_t kh = KH > 0 ? KH : g.kh, kw = KW > 0 ? KW : g.kw;
    for (int v = 0; v < nv; ++v) {
      __m512 acc = _mm512_set1_ps(b);
      DTORCH_AVX512_UNROLL
      for (int64_t i = 0; i < kh; ++i) {
        const __mmask16 rm = rows[v][i];
        const float* xr = xp + 16 * v + (i * g.dh - g.pt) * g.w - g.pl;
        DTORCH_AVX512_UNROLL
        for (int64_t j = 0; j < kw; ++j) {
          const __m512 xv = _mm512_maskz_loadu_ps(static_cast<__mmask16>(rm & cols[v][j]), xr + j * g.dw);
          acc = _mm512_mask3_fmadd_ps(_mm512_set1_ps(wc[i * kw + j]), xv, acc, rm);
        }
      }
      bool done = false;
      const int n = __builtin_popcount(out[v]);
      _mm512_mask_storeu_ps(yp + 16 * v, out[v], k5::activate(g.act, acc, &done));
      if (!done) k5::activate_rows(g.act, yp + 16 * v, n);
    }
  }
};

void run_depthwise(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
  const int64_t planes = g.n * g.c, hw = g.h * g.w, ohw = g.oh * g.ow, taps = g.kh * g.kw;
  if (DwFlat::applies(g)) {
    const DwFlat f(g);
    kernels::parallel_chunks(pool, planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t c = p % g.c;
        const float b0 = bias == nullptr ? 0.0f : bias[c];
        if (g.kh == 3 && g.kw == 3)
          f.plane<3, 3>(g, x + p * hw, w + c * taps, b0, y + p * ohw);
        else
          f.plane<0, 0>(g, x + p * hw, w + c * taps, b0, y + p * ohw);
      }
    });
    return;
  }
  kernels::parallel_chunks(pool, planes, 1, [&](int64_t b, int64_t e) {
    if (k5::dw3x3_applies(g) && g.sw == 1) {
      k5::dw3x3_planes<1>(g, x, w, bias, y, b, e);
    } else if (k5::dw3x3_applies(g)) {
      k5::dw3x3_planes<2>(g, x, w, bias, y, b, e);
    } else {
      for (int64_t p = b; p < e; ++p) {
        const int64_t c = p % g.c;
        depthwise_plane(g, x + p * hw, w + c * taps, bias == nullptr ? 0.0f : bias[c], y + p * ohw);
      }
    }
  });
}

// The avx512 pieces of kernels/common/fma_conv.h's conv2d.
struct Avx512 {
  static constexpr int64_t kPanel = kWP;
  static size_t work_floats(const Geo& g) {  // the transposed product's buffers
    if (channel_major(g)) return static_cast<size_t>(ChannelSource(g, false, Tiles::kCR).floats(g));
    if (transposed(g)) return static_cast<size_t>(cols_t_floats(g) + g.oh * g.ow * g.og);
    return direct(g) ? static_cast<size_t>(DirectPlan(g).floats(g)) : 0;
  }
  static bool takes_depthwise(const Geo&) { return true; }
  static void depthwise(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
    run_depthwise(pool, g, x, w, bias, y);
  }
  static void gemm_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                         float* yg, float* work) {
    gemm_one_group(pool, g, wg, xg, ep, yg, work);
  }
};
using Conv = kernels::FmaConv2d<Avx512>;
using Blocked = BlockedConv2d<Conv, Tiles>;

// --- blocked layouts (core/kernel.h) -----------------------------------------------------------------------
//
// Dense convolutions (groups = 1) take a blocked X (column stride 1 or 2) and write a blocked Y, in any
// combination with NCHW: they run channel-major then, whatever their K (a blocked Y needs no transposition, so the
// tile pays for short K too), with the same products in the same order as every other path: the same bits.

// Depthwise convolutions take X and Y blocked together: each vector is one position's 16 channels, so no lane is
// spent on padding or on a row's end and every stride reads plain loads. Each output starts at its bias and adds its
// taps in (row, column) order with one FMA each, skipping rows outside the image and adding +0 for columns outside
// it, as depthwise_plane and kernels/avx512/depthwise_avx512.h do: the same bits.
constexpr int kDwPos = 8;               // positions per step (independent FMA chains)

void Tiles::depthwise_blocked(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias,
                              float* y) {
  const int64_t B = kLayoutBlock, taps = g.kh * g.kw, cb = g.c / B;
  // Output columns [lo, hi) read only columns inside the input row.
  int64_t lo = 0, hi = 0;
  window_inside(g.ow, g.sw, g.pl, (g.kw - 1) * g.dw, g.w, &lo, &hi);
  const kernels::PlaneRows rows(pool, cb, g.oh);
  kernels::parallel_chunks(pool, g.n * cb * g.oh, 4, [&](int64_t ub, int64_t ue) {
    __m512 wv[kDwBlockedTaps];
    int64_t loaded = -1;
    kernels::PlaneRows::Pos at = rows.at(ub);
    for (int64_t u = ub; u < ue; ++u, rows.next(&at)) {
      const int64_t plane = at.plane, oh = at.row, blk = at.pi;
      if (plane != loaded) {  // the block's weights: tap t of channel c is w[c * taps + t]
        const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                               _mm512_set1_epi32(static_cast<int32_t>(taps)));
        for (int64_t t = 0; t < taps; ++t)
          wv[t] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), __mmask16{0xFFFF}, idx, w + blk * B * taps + t, 4);
        loaded = plane;
      }
      const __m512 b = bias == nullptr ? _mm512_setzero_ps() : _mm512_loadu_ps(bias + blk * B);
      const float* xp = x + plane * g.h * g.w * B;
      float* yr = y + (plane * g.oh + oh) * g.ow * B;
      int64_t i0 = 0, i1 = g.kh;  // kernel rows inside the image
      while (i0 < g.kh && oh * g.sh - g.pt + i0 * g.dh < 0) ++i0;
      while (i1 > i0 && oh * g.sh - g.pt + (i1 - 1) * g.dh >= g.h) --i1;
      auto finish = [&](__m512 acc, float* o) {
        bool done = false;
        _mm512_storeu_ps(o, k5::activate(g.act, acc, &done));
        if (!done) k5::activate_rows(g.act, o, B);
      };
      auto one = [&](int64_t ow) {  // a border position: +0 for the columns outside the row
        __m512 acc = b;
        for (int64_t i = i0; i < i1; ++i) {
          const float* xr = xp + (oh * g.sh - g.pt + i * g.dh) * g.w * B;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = ow * g.sw - g.pl + j * g.dw;
            const __m512 v = iw >= 0 && iw < g.w ? _mm512_loadu_ps(xr + iw * B) : _mm512_setzero_ps();
            acc = _mm512_fmadd_ps(wv[i * g.kw + j], v, acc);
          }
        }
        finish(acc, yr + ow * B);
      };
      for (int64_t ow = 0; ow < lo; ++ow) one(ow);
      int64_t ow = lo;
      for (; ow + kDwPos <= hi; ow += kDwPos) {
        __m512 acc[kDwPos];
        DTORCH_AVX512_UNROLL
        for (int p = 0; p < kDwPos; ++p) acc[p] = b;
        for (int64_t i = i0; i < i1; ++i) {
          const float* xr = xp + ((oh * g.sh - g.pt + i * g.dh) * g.w + ow * g.sw - g.pl) * B;
          for (int64_t j = 0; j < g.kw; ++j) {
            const __m512 wt = wv[i * g.kw + j];
            const float* xj = xr + j * g.dw * B;
            DTORCH_AVX512_UNROLL
            for (int p = 0; p < kDwPos; ++p) acc[p] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(xj + p * g.sw * B), acc[p]);
          }
        }
        DTORCH_AVX512_UNROLL
        for (int p = 0; p < kDwPos; ++p) finish(acc[p], yr + (ow + p) * B);
      }
      for (; ow < g.ow; ++ow) one(ow);
    }
  });
}

}  // namespace
DTORCH_REGISTER_AVX512_LAYOUT_KERNEL(conv2d, DType::kFloat32, Blocked::infer, Blocked::run, Conv::prepare,
                                    Blocked::layouts);
}  // namespace dtorch
