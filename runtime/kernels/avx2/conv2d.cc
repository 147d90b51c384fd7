// conv2d, x86-64 AVX2 FMA kernel set (kernels/avx2/avx2.h: FMA, within 1e-5 x output scale of portable and
// eager; identical bits for any thread count).
//
// Dense and grouped convolutions: per image and group, the FMA GEMM of kernels/avx2/gemm_fma.h, weights
// (Og x Cg*kh*kw, packed once when the session loads: `prepare`; into scratch at run time when the weight is not a
// constant) times the im2col columns, which the GEMM's fill step writes block by block (24 output positions x up to
// 256 kernel rows) into a buffer that stays in L1: the columns are never written to memory. The fill goes tap by
// tap (kernel row and column), working out where the tap's 24 inputs lie once for every channel: plain loads of
// consecutive floats (stride 1) or of every other float (stride 2) of an input row, masked where a panel crosses
// an output row or meets the padding; gathers for other strides (Im2col). A 1x1 stride-1 unpadded convolution
// copies input rows. Bias and the fused activation are applied in the GEMM (bias first, then the taps).
// Small maps (7 x 7), whose positions fill the tile's 24 columns badly, run the transposed product: output channels
// across the columns (W^T's blocks copied from the packed weights), the columns' transpose packed in 4-position
// panels, then Y^T transposed in registers into Y; the bits are the same (see `transposed`).
// Depthwise convolutions (one input and one output channel per group): direct kernels, 8 output columns per
// vector, taps in (row, column) order with one FMA each starting from the bias: for 3x3 undilated ones with column
// stride 1 or 2, blocks of up to 6 independent vectors with the weights in registers (dw3x3_planes); others 4 rows
// at a time with masked loads or gathers per tap (depthwise_plane).
// Blocked layouts (core/kernel.h, NCHW16c): dense convolutions take a blocked X and/or write a blocked Y through the
// channel-major tiles of kernels/common/channel_conv.h (6 positions x 16 output channels, the packed weights' panels
// read in place), depthwise ones take X and Y blocked together (depthwise_blocked); every combination gives the
// NCHW bits.
// Threads split GEMM work units or output planes only.
// Planes whose positions do not fit 32-bit gather indices run the best bit-exact kernel (x86 or portable).
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/depthwise_fma.h"
#include "kernels/avx2/gemm_fma.h"
#include "kernels/common/activation.h"
#include "kernels/common/channel_conv.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/fma_conv.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

namespace k2 = kernels::avx2;
using Geo = kernels::FmaConvGeometry;

// --- dense / grouped: the im2col fill of the GEMM ---------------------------------------------------------


// Columns of one image and group: B[r][q] for kernel row r = (c, i, j) and output position q = (oh, ow) is
// x[c][oh * sh - pt + i * dh][ow * sw - pl + j * dw], 0 outside the image.
//
// The fill goes tap by tap (i, j). A panel's 24 positions fall into runs that share an output row; for one tap,
// the part of a run whose inputs lie inside the image reads consecutive floats of one input row (stride 1) or
// every other one (stride 2). Each vector of 8 positions is the OR of one masked load per run it meets (usually
// one; two where the panel crosses an output row), or a plain load where the run covers all 8 lanes with reads
// inside the row. Where those loads start and which lanes they keep depends on the tap only, so it is worked out
// once per tap and used for every input channel. Other strides gather.
struct Im2col {
  const Geo* g;
  const float* x;  // the group's first input channel

  static constexpr int kNR = k2::kNR, kNV = k2::kNV;
  static constexpr int kMaxRuns = kNR;  // a run holds at least one position

  using Run = kernels::ConvRun;
  struct Load {       // one vector's load of one run, for one tap
    __m256i m0, m1;   // kept lanes (stride 2: of floats [0, 8) and [8, 16))
    __m256i mo;       // kept lanes of the vector
    int64_t off;      // input offset (within a channel) of lane 0's float (stride 2: of the 16 floats' first)
    bool full;        // every lane kept and every float read inside the row: a plain load
    bool in_plane;    // every float a plain load reads lies in the channel's plane: a plain load ANDed with mo
  };

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    if (g->sw == 1) return runs<1>(j0, nr, k0, kc, dst);
    if (g->sw == 2) return runs<2>(j0, nr, k0, kc, dst);
    gather(j0, nr, k0, kc, dst);
  }

  template <int SW>
  void runs(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const Geo& G = *g;
    Run runs[kMaxRuns];
    const int n_runs = kernels::conv_panel_runs(G, j0, nr, runs, kMaxRuns);
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;  // channels with rows in [k0, k0 + kc)
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    Load loads[kNV][kMaxRuns];  // per vector, the loads of the runs it meets
    int n_loads[kNV];
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / G.kw, j = t % G.kw;
      // A whole panel inside one input row: plain loads, nothing to work out.
      if (n_runs == 1 && nr == kNR) {
        const int64_t ih = runs[0].oh * G.sh - G.pt + i * G.dh, iw0 = runs[0].ow * SW - G.pl + j * G.dw;
        if (ih >= 0 && ih < G.h && iw0 >= 0 && iw0 + kNR * SW - 1 < G.w) {
          const float* s0 = x + ih * G.w + iw0;
          for (int64_t c = c_begin; c < c_end; ++c) {
            const int64_t r = c * taps + t - k0;
            if (r < 0 || r >= kc) continue;
            const float* s = s0 + c * plane;
            float* d = dst + r * kNR;
            for (int v = 0; v < kNV; ++v) {
              const float* sv = s + 8 * v * SW;
              const __m256 val =
                  SW == 1 ? _mm256_loadu_ps(sv) : k2::even_floats(_mm256_loadu_ps(sv), _mm256_loadu_ps(sv + 8));
              _mm256_store_ps(d + 8 * v, val);
            }
          }
          continue;
        }
      }
      for (int v = 0; v < kNV; ++v) n_loads[v] = 0;
      for (int k = 0; k < n_runs; ++k) {
        int qa = 0, qb = 0;
        int64_t lane0 = 0, col0 = 0;  // where panel lane 0 would read, and its input column
        if (!kernels::conv_run_tap<SW>(G, runs[k], i, j, &qa, &qb, &lane0, &col0)) continue;
        for (int v = qa / 8; v * 8 < qb; ++v) {
          Load& L = loads[v][n_loads[v]++];
          L.off = lane0 + 8 * v * SW;
          const int la = qa - 8 * v, lb = qb - 8 * v;  // kept lanes [la, lb) of this vector (may reach past 0..8)
          const int64_t first = col0 + 8 * v * SW;  // input column of this vector's lane 0
          const int64_t last = first + (SW == 1 ? 7 : 15);  // of its last float read by a plain load
          L.full = la <= 0 && lb >= 8 && first >= 0 && last < G.w;
          L.in_plane = L.off >= 0 && L.off + (SW == 1 ? 8 : 16) <= plane;
          if (L.full) continue;  // a plain load: no masks
          const __m256i lo_l = _mm256_set1_epi32(la), hi_l = _mm256_set1_epi32(lb);
          L.mo = _mm256_andnot_si256(_mm256_cmpgt_epi32(lo_l, lanes), _mm256_cmpgt_epi32(hi_l, lanes));
          if (L.in_plane) continue;  // a plain load ANDed with mo
          if (SW == 1) {
            L.m0 = L.mo;
          } else {  // float e of the 16 belongs to lane e / 2 and is kept when e is even
            const __m256i even_lane0 = _mm256_setr_epi32(0, -1, 1, -1, 2, -1, 3, -1);
            const __m256i even_lane1 = _mm256_setr_epi32(4, -1, 5, -1, 6, -1, 7, -1);
            const __m256i odd = _mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1);
            L.m0 = _mm256_andnot_si256(_mm256_or_si256(odd, _mm256_cmpgt_epi32(lo_l, even_lane0)),
                                       _mm256_cmpgt_epi32(hi_l, even_lane0));
            L.m1 = _mm256_andnot_si256(_mm256_or_si256(odd, _mm256_cmpgt_epi32(lo_l, even_lane1)),
                                       _mm256_cmpgt_epi32(hi_l, even_lane1));
          }
        }
      }
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        float* d = dst + r * kNR;
        for (int v = 0; v < kNV; ++v) {
          __m256 out = _mm256_setzero_ps();
          for (int l = 0; l < n_loads[v]; ++l) {
            const Load& L = loads[v][l];
            const float* s = xc + L.off;
            __m256 val;
            if (L.full || L.in_plane) {  // plain loads (the lanes outside the run are cleared below)
              val = SW == 1 ? _mm256_loadu_ps(s) : k2::even_floats(_mm256_loadu_ps(s), _mm256_loadu_ps(s + 8));
              if (!L.full) val = _mm256_and_ps(val, _mm256_castsi256_ps(L.mo));
            } else if (SW == 1) {  // masked-off lanes are never read
              val = _mm256_maskload_ps(s, L.m0);
            } else {
              val = k2::even_floats(_mm256_maskload_ps(s, L.m0), _mm256_maskload_ps(s + 8, L.m1));
            }
            out = _mm256_or_ps(out, val);  // runs keep disjoint lanes; the others are +0
          }
          _mm256_store_ps(d + 8 * v, out);
        }
      }
    }
  }

  // Strides above 2: masked gathers.
  void gather(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const Geo& G = *g;
    alignas(32) int32_t ih0[kNR], iw0[kNR];
    for (int q = 0; q < kNR; ++q) {
      const int64_t p = j0 + (q < nr ? q : nr - 1);
      ih0[q] = static_cast<int32_t>((p / G.ow) * G.sh - G.pt);
      iw0[q] = static_cast<int32_t>((p % G.ow) * G.sw - G.pl);
    }
    const __m256i H = _mm256_set1_epi32(static_cast<int32_t>(G.h)), W = _mm256_set1_epi32(static_cast<int32_t>(G.w));
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / G.kw, j = t % G.kw;
      __m256i idx[kNV], valid[kNV];
      const __m256i di = _mm256_set1_epi32(static_cast<int32_t>(i * G.dh));
      const __m256i dj = _mm256_set1_epi32(static_cast<int32_t>(j * G.dw));
      for (int v = 0; v < kNV; ++v) {
        const __m256i ih = _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(ih0 + 8 * v)), di);
        const __m256i iw = _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(iw0 + 8 * v)), dj);
        // 0 <= ih < H and 0 <= iw < W and q < nr (signed compares; H, W < 2^30)
        const __m256i in_h = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), ih),
                                                 _mm256_cmpgt_epi32(H, ih));
        const __m256i in_w = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), iw),
                                                 _mm256_cmpgt_epi32(W, iw));
        const __m256i in_q = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8 * v), lanes);
        valid[v] = _mm256_and_si256(_mm256_and_si256(in_h, in_w), in_q);
        idx[v] = _mm256_add_epi32(_mm256_mullo_epi32(ih, W), iw);
      }
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        for (int v = 0; v < kNV; ++v)
          _mm256_store_ps(dst + r * kNR + 8 * v, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xc, idx[v],
                                                                          _mm256_castsi256_ps(valid[v]), 4));
      }
    }
  }
};

// 1x1, stride 1, no padding: B[r][q] = x[r][q] (the input plane is the column matrix, K rows of ld floats).
struct Rows {
  const float* x;
  int64_t ld;  // H * W
  const float* end;  // x + K * ld
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    constexpr int kNR = k2::kNR, kNV = k2::kNV;
    const k2::RowMasks mk(nr);
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = x + (k0 + r) * ld + j0;
      if (nr == kNR) {
        for (int v = 0; v < kNV; ++v) _mm256_store_ps(dst + r * kNR + 8 * v, _mm256_loadu_ps(s + 8 * v));
      } else {
        for (int v = 0; v < kNV; ++v)
          _mm256_store_ps(dst + r * kNR + 8 * v, k2::load_lanes(s + 8 * v, mk.m[v], x, end));
      }
    }
  }
};

// --- small K: B read in place from a padded copy of the input -------------------------------------------

// A convolution whose kernel rows fit one K block (K = Cg*kh*kw <= 256: stems such as 3 x 3 x 3 or 3 x 7 x 7)
// spends as much on the im2col fill as on the products when done panel by panel (a 3-channel input shares each
// tap's setup among 3 rows only). Instead the input is copied once per image with its padding, each row split into
// its column-stride phases (stride 2: even and odd columns), so that for tap (c, i, j) the 24 positions of a panel
// inside one output row read 24 consecutive floats: the GEMM's B rows are the copy's rows, shifted (OffsetRows),
// and no block is filled. The padding is +0.0f as in the fill, the products and their order are the GEMM's:
// identical bits. Panels never cross an output row, so it is taken only where a row's panels fill at least 3/4 of
// their lanes (OW = 112: 5 panels, 93%).
struct DirectPlan {
  int64_t hp, wh, row, plane;  // padded rows, floats per phase row, floats per padded row (sw phases), per channel

  explicit DirectPlan(const Geo& g) {
    hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    wh = kernels::ceil_div(g.ow, k2::kNR) * k2::kNR + (g.kw - 1) * g.dw / g.sw + 1;
    row = g.sw * wh;
    plane = hp * row;
  }
  int64_t floats(const Geo& g) const { return g.cg * plane + k2::kNR; }  // + the last panel's reads past its row
};

bool direct(const Geo& g) {
  if (g.groups != 1 || g.pointwise || g.cg * g.kh * g.kw > k2::kKC || (g.sw != 1 && g.sw != 2)) return false;
  return 4 * g.ow >= 3 * kernels::ceil_div(g.ow, k2::kNR) * k2::kNR;
}

// The padded, phase-split copy of one image: xp[c][r][ph][u] = x[c][r - pt][u * sw + ph - pl], 0 outside.
void pad_input(ThreadPool* pool, const Geo& g, const DirectPlan& d, const float* x, float* xp) {
  kernels::parallel_chunks(pool, g.cg * d.hp, 8, [&](int64_t b, int64_t e) {
    for (int64_t cr = b; cr < e; ++cr) {
      const int64_t c = cr / d.hp, r = cr % d.hp, ih = r - g.pt;
      float* dst = xp + c * d.plane + r * d.row;
      for (int64_t u = 0; u < d.row; ++u) dst[u] = 0.0f;
      if (ih < 0 || ih >= g.h) continue;
      const float* src = x + (c * g.h + ih) * g.w;
      // Columns past the phase rows' width are read by no output: left out.
      int64_t iw = 0;
      if (g.sw == 1) {
        for (; iw + 8 <= g.w && iw + 8 + g.pl <= d.wh; iw += 8) _mm256_storeu_ps(dst + iw + g.pl, _mm256_loadu_ps(src + iw));
      } else {  // even input columns land in phase pl % 2, odd ones in the other, at (iw + pl) / 2
        float* ev = dst + (g.pl % 2) * d.wh + g.pl / 2;
        float* od = dst + ((g.pl + 1) % 2) * d.wh + (g.pl + 1) / 2;
        for (; iw + 16 <= g.w && (iw + 16 + g.pl) / 2 <= d.wh - 1; iw += 16) {
          const __m256 lo = _mm256_loadu_ps(src + iw), hi = _mm256_loadu_ps(src + iw + 8);
          _mm256_storeu_ps(ev + iw / 2, k2::even_floats(lo, hi));
          _mm256_storeu_ps(od + iw / 2, k2::odd_floats(lo, hi));
        }
      }
      for (; iw < g.w; ++iw) {
        const int64_t pc = iw + g.pl;
        if (pc / g.sw < d.wh) dst[(pc % g.sw) * d.wh + pc / g.sw] = src[iw];
      }
    }
  });
}

// One image: Y = W . B with B[k][q] = xp row k shifted, work units (output row, panel of the row).
void direct_gemm(ThreadPool* pool, const Geo& g, const float* wp, const float* x, const kernels::Epilogue& ep,
                 float* y, float* work) {
  const DirectPlan d(g);
  pad_input(pool, g, d, x, work);
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  int64_t off[k2::kKC];
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        off[(c * g.kh + i) * g.kw + j] = c * d.plane + i * g.dh * d.row + (j * g.dw % g.sw) * d.wh + j * g.dw / g.sw;
  const int64_t row_panels = kernels::ceil_div(g.ow, k2::kNR), tiles = kernels::ceil_div(g.og, k2::kMR);
  kernels::parallel_chunks(pool, g.oh * row_panels, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t oh = u / row_panels, ow0 = (u % row_panels) * k2::kNR;
      const int nr = static_cast<int>(g.ow - ow0 < k2::kNR ? g.ow - ow0 : k2::kNR);
      const k2::RowMasks mk(nr);
      const k2::OffsetRows rows{work + oh * g.sh * d.row + ow0, off};
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t i0 = t * k2::kMR;
        const int mr = static_cast<int>(g.og - i0 < k2::kMR ? g.og - i0 : k2::kMR);
        k2::tile_rows(mr, true, true, nr, kg, k2::tile_a(wp, k2::kWP, kg, t, 0), k2::kWP, rows, i0, oh * g.ow + ow0, y,
                      ohw, ep, mk);
      }
    }
  });
}

// --- the transposed product (small maps) ------------------------------------------------------------------

// Which orientation: the register tile's 24 columns run over output positions (Y = W . cols) or, when that wastes
// more lanes (7 x 7 maps: 49 positions fill 72 columns), over output channels: Y^T = cols^T . W^T into scratch,
// then transposed into Y. Both start each output at its bias and add the same products in the same order with one
// FMA each (a fused multiply-add does not depend on the order of its factors): identical bits. The transposed one
// pays for packing cols^T, filling W^T's blocks and the transposition, so it needs a clear saving (the same rule
// as kernels/avx512; a 1x1 convolution, whose normal columns are plain row copies, a larger one).
bool transposed(const Geo& g) {
  const int64_t ohw = g.oh * g.ow;
  const int64_t normal = kernels::ceil_div(ohw, k2::kNR) * k2::kNR * kernels::ceil_div(g.og, k2::kMR) * k2::kMR;
  const int64_t swapped = kernels::ceil_div(g.og, k2::kNR) * k2::kNR * kernels::ceil_div(ohw, k2::kMR) * k2::kMR;
  return 10 * swapped < (g.pointwise ? 8 : 9) * normal;
}

// Scratch of the transposed product: cols^T packed in kMR-position panels (pack_a's layout), then Y^T (OH*OW x Og).
int64_t cols_t_floats(const Geo& g) { return kernels::ceil_div(k2::packed_a_floats(g.oh * g.ow, g.cg * g.kh * g.kw), 8) * 8; }

// The transposed product's B block: W^T[k][j0 + q] = W[j0 + q][k], from the weights packed in kWP-channel panels
// (k-major, rows past Og zero): each row of the block is kNR / kMR = 6 pieces of 4 channels (a quarter of a panel),
// 0 past the last channel.
struct WeightPanels {
  const float* wp;
  int64_t K;
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    constexpr int kPieces = k2::kNR / k2::kMR;
    const int present = static_cast<int>(kernels::ceil_div(nr, k2::kMR));
    const float* src[kPieces];
    for (int p = 0; p < kPieces; ++p) src[p] = k2::tile_a(wp, k2::kWP, K, j0 / k2::kMR + p, k0);
    const __m128 zero = _mm_setzero_ps();
    for (int64_t r = 0; r < kc; ++r) {
      float* d = dst + r * k2::kNR;
      for (int p = 0; p < kPieces; ++p)
        _mm_store_ps(d + 4 * p, p < present ? _mm_loadu_ps(src[p] + k2::kWP * r) : zero);
    }
  }
};
static_assert(k2::kMR == 4 && k2::kWP % k2::kMR == 0, "WeightPanels copies 4-float pieces of whole panels");

// r[i] = row i of an 8 x 8 block; after: r[i] = its column i.
inline void transpose8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    r[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x20);
    t[4 + i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

// Y^T (ohw x og, row-major) into Y (og x ohw), in 8 x 8 blocks transposed in registers.
void transpose_out(ThreadPool* pool, const float* yt, int64_t ohw, int64_t og, float* y) {
  const int64_t blocks = kernels::ceil_div(og, 8);
  kernels::parallel_chunks(pool, blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t ob = b; ob < e; ++ob) {
      const int64_t o0 = ob * 8;
      const int no = static_cast<int>(og - o0 < 8 ? og - o0 : 8);
      const __m256i mo = k2::lane_mask(no);
      for (int64_t p0 = 0; p0 < ohw; p0 += 8) {
        const int np = static_cast<int>(ohw - p0 < 8 ? ohw - p0 : 8);
        __m256 r[8];
        for (int i = 0; i < 8; ++i)
          r[i] = i < np ? _mm256_maskload_ps(yt + (p0 + i) * og + o0, mo) : _mm256_setzero_ps();
        transpose8(r);
        for (int j = 0; j < no; ++j) k2::store_lanes(y + (o0 + j) * ohw + p0, r[j], np);
      }
    }
  });
}

// cols^T in kMR-position panels: the normal fill's blocks (kKC kernel rows x kNR positions), cut into their
// kNR / kMR panels of 4 positions (positions past OH*OW are 0, as the fill writes them).
template <typename Fill>
void pack_cols_t(ThreadPool* pool, int64_t ohw, int64_t kg, const Fill& fill, float* cols_t) {
  constexpr int kPieces = k2::kNR / k2::kMR;
  kernels::parallel_chunks(pool, kernels::ceil_div(ohw, k2::kNR), 1, [&](int64_t b, int64_t e) {
    alignas(32) float buf[k2::kKC * k2::kNR];
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t j0 = blk * k2::kNR;
      const int nr = static_cast<int>(ohw - j0 < k2::kNR ? ohw - j0 : k2::kNR);
      const int panels = static_cast<int>(kernels::ceil_div(nr, k2::kMR));
      for (int64_t k0 = 0; k0 < kg; k0 += k2::kKC) {
        const int64_t kc = kg - k0 < k2::kKC ? kg - k0 : k2::kKC;
        fill(j0, nr, k0, kc, buf);
        for (int p = 0; p < panels && p < kPieces; ++p) {
          float* d = cols_t + (j0 / k2::kMR + p) * k2::kMR * kg + k0 * k2::kMR;
          for (int64_t r = 0; r < kc; ++r) _mm_storeu_ps(d + 4 * r, _mm_load_ps(buf + r * k2::kNR + 4 * p));
        }
      }
    }
  });
}

// One image and group: the normal orientation, or the transposed one into `work` (cols^T, then Y^T).
void gemm_one_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                    float* yg, float* work) {
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  if (direct(g)) {
    ep.bias_per_row = true;
    direct_gemm(pool, g, wg, xg, ep, yg, work);
    return;
  }
  const bool swap = transposed(g);
  ep.bias_per_row = !swap;
  if (!swap) {
    if (g.pointwise)
      k2::gemm(pool, g.og, ohw, kg, wg, k2::kWP, Rows{xg, ohw, xg + kg * ohw}, yg, ohw, ep);
    else
      k2::gemm(pool, g.og, ohw, kg, wg, k2::kWP, Im2col{&g, xg}, yg, ohw, ep);
    return;
  }
  float* cols_t = work;
  float* yt = cols_t + cols_t_floats(g);
  if (g.pointwise)
    pack_cols_t(pool, ohw, kg, Rows{xg, ohw, xg + kg * ohw}, cols_t);
  else
    pack_cols_t(pool, ohw, kg, Im2col{&g, xg}, cols_t);
  k2::gemm(pool, ohw, g.og, kg, cols_t, k2::kMR, WeightPanels{wg, kg}, yt, g.og, ep);
  transpose_out(pool, yt, ohw, g.og, yg);
}

// The avx2 pieces of kernels/common/fma_conv.h's conv2d.
struct Avx2 {
  static constexpr int64_t kPanel = k2::kWP;
  static size_t work_floats(const Geo& g) {  // the padded input, or the transposed product's buffers
    if (direct(g)) return static_cast<size_t>(DirectPlan(g).floats(g));
    return transposed(g) ? static_cast<size_t>(cols_t_floats(g) + g.oh * g.ow * g.og) : 0;
  }
  static bool takes_depthwise(const Geo&) { return true; }
  static void depthwise(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
    k2::depthwise(pool, g, x, w, bias, y);
  }
  static void gemm_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                         float* yg, float* work) {
    gemm_one_group(pool, g, wg, xg, ep, yg, work);
  }
};
using Conv = kernels::FmaConv2d<Avx2>;

// --- channel-major tiles and blocked layouts (kernels/common/channel_conv.h) ----------------------------------
//
// A tile is MR <= 6 positions x the 16 output channels of one packed weight panel (two ymm per position: 12
// accumulators, the panel's two vectors for k and one broadcast). Each output starts at its bias and adds its
// products in k order with one FMA each, as the GEMM's tiles do (a fused multiply-add does not depend on the order
// of its factors): the same bits.
namespace cc = kernels::channel_conv;
constexpr int kCR = 6;  // positions per tile

// Lanes [0, N) of v to p[0 .. N) (N <= 8): 4-, 2- and 1-float stores, no masked store (slow on Zen 2).
template <int N>
DTORCH_AVX2_INLINE void store_first(float* p, __m256 v) {
  static_assert(N >= 0 && N <= 8, "at most 8 lanes");
  if constexpr (N == 8) {
    _mm256_storeu_ps(p, v);
  } else if constexpr (N > 0) {
    __m128 q = _mm256_castps256_ps128(v);
    int at = 0;
    if constexpr (N >= 4) {
      _mm_storeu_ps(p, q);
      q = _mm256_extractf128_ps(v, 1);
      at = 4;
    }
    if constexpr (N % 4 >= 2) {
      _mm_storel_pi(reinterpret_cast<__m64*>(p + at), q);
      q = _mm_movehl_ps(q, q);
      at += 2;
    }
    if constexpr (N % 2 == 1) _mm_store_ss(p + at, q);
  }
}

// Positions r < MR / 2 read a + off[k] + r * PS and go to y, the others read a2 + off[k] + (r - MR / 2) * PS and go
// to y2 (PS: floats from one position's input to the next: the column stride in an NCHW source, 16 x it in a blocked
// one; cc::ChannelTileFn). Y blocked (YB: a position's 16 channels are two stores) or NCHW (noc rows of positions,
// ohw floats apart: transposed in registers, 8 channels at a time). NV: vectors of channels (1 when noc <= 8, the last
// panel of an NCHW Y whose channel count is not a multiple of 16: no FMA on the panel's zero half).
template <int MR, int PS, bool YB, int NV>
void channel_tile(int64_t K, const float* a, const float* a2, const int64_t* off, const float* b, const float* pf,
                  const float* bias, int noc, const kernels::Activation& act, float* y, float* y2, int64_t ohw) {
  constexpr int H = MR / 2;
  static_assert(NV == 2 || !YB, "a blocked Y holds 16 channels per position");
  __m256 c0[MR], c1[MR];  // channels [0, 8) and [8, 16) of each position (c1 unused when NV = 1)
  const __m256 b0 = bias == nullptr ? _mm256_setzero_ps() : _mm256_maskload_ps(bias, k2::lane_mask(noc));
  const __m256 b1 = bias == nullptr || NV == 1 ? _mm256_setzero_ps()
                                               : _mm256_maskload_ps(bias + 8, k2::lane_mask(noc - 8));
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < MR; ++r) {
    c0[r] = b0;
    c1[r] = b1;
  }
  // Unrolled by 4 as the avx512 tile (Intel AVX-512 VM, the avx2 set, same bits: SimpleNet 3.32 -> 3.26 ms,
  // ResNet-18 48.9-49.3 -> 48.4-48.8 at 1 thread).
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    const float* ak = a + off[k];
    const float* ak2 = a2 + off[k];
    _mm_prefetch(reinterpret_cast<const char*>(pf + 16 * k), _MM_HINT_T1);
    const __m256 w0 = _mm256_load_ps(b), w1 = NV == 2 ? _mm256_load_ps(b + 8) : w0;
    DTORCH_AVX2_UNROLL
    for (int r = 0; r < MR; ++r) {
      const __m256 x = _mm256_broadcast_ss(r < H ? ak + r * PS : ak2 + (r - H) * PS);
      c0[r] = _mm256_fmadd_ps(x, w0, c0[r]);
      if (NV == 2) c1[r] = _mm256_fmadd_ps(x, w1, c1[r]);
    }
    b += k2::kWP;
  }
  bool done = false;
  if constexpr (YB) {  // noc is 16 (a blocked Y's channel count is a multiple of 16)
    DTORCH_AVX2_UNROLL
    for (int r = 0; r < MR; ++r) {
      float* o = r < H ? y + r * kLayoutBlock : y2 + (r - H) * kLayoutBlock;
      _mm256_storeu_ps(o, k2::activate(act, c0[r], &done));
      _mm256_storeu_ps(o + 8, k2::activate(act, c1[r], &done));
    }
    if (!done) {
      k2::activate_rows(act, y, H * kLayoutBlock);
      k2::activate_rows(act, y2, (MR - H) * kLayoutBlock);
    }
  } else {
    const bool one = y2 == y + H;  // the second half follows the first in Y's rows
    const __m256i down = _mm256_setr_epi32(H, H + 1, H + 2, H + 3, H + 4, H + 5, H + 6, H + 7);  // lane l + H to l
    for (int v = 0; v < NV; ++v) {
      const int n = noc - 8 * v;
      if (n <= 0) break;
      __m256 t[8];
      DTORCH_AVX2_UNROLL
      for (int r = 0; r < 8; ++r) t[r] = r < MR ? (v == 0 ? c0[r] : c1[r]) : _mm256_setzero_ps();
      transpose8(t);
      for (int j = 0; j < 8 && j < n; ++j) {
        float* row = y + (8 * v + j) * ohw;
        float* row2 = y2 + (8 * v + j) * ohw;
        const __m256 o = k2::activate(act, t[j], &done);
        if (one) {
          store_first<MR>(row, o);
        } else {
          store_first<H>(row, o);
          store_first<MR - H>(row2, _mm256_permutevar8x32_ps(o, down));
        }
        if (!done) {
          k2::activate_rows(act, row, one ? MR : H);
          if (!one) k2::activate_rows(act, row2, MR - H);
        }
      }
    }
  }
}

template <int PS, bool YB, int NV>
cc::ChannelTileFn channel_tile_for(int mr) {
  static constexpr cc::ChannelTileFn kTiles[kCR] = {channel_tile<1, PS, YB, NV>, channel_tile<2, PS, YB, NV>,
                                                    channel_tile<3, PS, YB, NV>, channel_tile<4, PS, YB, NV>,
                                                    channel_tile<5, PS, YB, NV>, channel_tile<6, PS, YB, NV>};
  return kTiles[mr - 1];
}
static_assert(kCR == 6, "channel_tile_for lists 1..6 positions");

template <bool YB, int NV>
cc::ChannelTileFn channel_tile_ps(int64_t ps, int mr) {
  switch (ps) {
    case 1: return channel_tile_for<1, YB, NV>(mr);
    case 2: return channel_tile_for<2, YB, NV>(mr);
    case kLayoutBlock: return channel_tile_for<kLayoutBlock, YB, NV>(mr);
    default: return channel_tile_for<2 * kLayoutBlock, YB, NV>(mr);
  }
}

// Depthwise convolutions with X and Y blocked: each position's 16 channels are two vectors, so no lane is spent on
// padding or on a row's end and every stride reads plain loads. Each output starts at its bias and adds its taps in
// (row, column) order with one FMA each, skipping rows outside the image and adding +0 for columns outside it, as
// depthwise_fma.h does: the same bits.
constexpr int64_t kDwBlockedTaps = 49;  // weights of kernels up to 7 x 7 kept per channel block
constexpr int kDwPos = 3;               // positions per step (6 independent FMA chains)

void depthwise_blocked(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
  const int64_t B = kLayoutBlock, taps = g.kh * g.kw, cb = g.c / B;
  int64_t lo = 0, hi = 0;  // output columns [lo, hi) read only columns inside the input row
  cc::window_inside(g.ow, g.sw, g.pl, (g.kw - 1) * g.dw, g.w, &lo, &hi);
  const kernels::PlaneRows rows(pool, cb, g.oh);
  kernels::parallel_chunks(pool, g.n * cb * g.oh, 4, [&](int64_t ub, int64_t ue) {
    alignas(32) float wv[kDwBlockedTaps * kLayoutBlock];  // tap t's 16 channels at wv + 16 t
    int64_t loaded = -1;
    kernels::PlaneRows::Pos at = rows.at(ub);
    for (int64_t u = ub; u < ue; ++u, rows.next(&at)) {
      const int64_t plane = at.plane, oh = at.row, blk = at.pi;
      if (plane != loaded) {  // tap t of channel c is w[c * taps + t]
        for (int64_t c = 0; c < B; ++c)
          for (int64_t t = 0; t < taps; ++t) wv[t * B + c] = w[(blk * B + c) * taps + t];
        loaded = plane;
      }
      const __m256 b0 = bias == nullptr ? _mm256_setzero_ps() : _mm256_loadu_ps(bias + blk * B);
      const __m256 b1 = bias == nullptr ? _mm256_setzero_ps() : _mm256_loadu_ps(bias + blk * B + 8);
      const float* xp = x + plane * g.h * g.w * B;
      float* yr = y + (plane * g.oh + oh) * g.ow * B;
      int64_t i0 = 0, i1 = g.kh;  // kernel rows inside the image
      while (i0 < g.kh && oh * g.sh - g.pt + i0 * g.dh < 0) ++i0;
      while (i1 > i0 && oh * g.sh - g.pt + (i1 - 1) * g.dh >= g.h) --i1;
      auto finish = [&](__m256 a0, __m256 a1, float* o) {
        bool done = false;
        _mm256_storeu_ps(o, k2::activate(g.act, a0, &done));
        _mm256_storeu_ps(o + 8, k2::activate(g.act, a1, &done));
        if (!done) k2::activate_rows(g.act, o, B);
      };
      auto one = [&](int64_t ow) {  // a border position: +0 for the columns outside the row
        __m256 a0 = b0, a1 = b1;
        for (int64_t i = i0; i < i1; ++i) {
          const float* xr = xp + (oh * g.sh - g.pt + i * g.dh) * g.w * B;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = ow * g.sw - g.pl + j * g.dw;
            const bool in = iw >= 0 && iw < g.w;
            const float* wt = wv + (i * g.kw + j) * B;
            a0 = _mm256_fmadd_ps(_mm256_load_ps(wt), in ? _mm256_loadu_ps(xr + iw * B) : _mm256_setzero_ps(), a0);
            a1 = _mm256_fmadd_ps(_mm256_load_ps(wt + 8), in ? _mm256_loadu_ps(xr + iw * B + 8) : _mm256_setzero_ps(),
                                 a1);
          }
        }
        finish(a0, a1, yr + ow * B);
      };
      for (int64_t ow = 0; ow < lo; ++ow) one(ow);
      int64_t ow = lo;
      for (; ow + kDwPos <= hi; ow += kDwPos) {
        __m256 a0[kDwPos], a1[kDwPos];
        DTORCH_AVX2_UNROLL
        for (int p = 0; p < kDwPos; ++p) {
          a0[p] = b0;
          a1[p] = b1;
        }
        for (int64_t i = i0; i < i1; ++i) {
          const float* xr = xp + ((oh * g.sh - g.pt + i * g.dh) * g.w + ow * g.sw - g.pl) * B;
          for (int64_t j = 0; j < g.kw; ++j) {
            const float* wt = wv + (i * g.kw + j) * B;
            const __m256 w0 = _mm256_load_ps(wt), w1 = _mm256_load_ps(wt + 8);
            const float* xj = xr + j * g.dw * B;
            DTORCH_AVX2_UNROLL
            for (int p = 0; p < kDwPos; ++p) {
              a0[p] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xj + p * g.sw * B), a0[p]);
              a1[p] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xj + p * g.sw * B + 8), a1[p]);
            }
          }
        }
        DTORCH_AVX2_UNROLL
        for (int p = 0; p < kDwPos; ++p) finish(a0[p], a1[p], yr + (ow + p) * B);
      }
      for (; ow < g.ow; ++ow) one(ow);
    }
  });
}

// This set's pieces of kernels/common/channel_conv.h.
struct Tiles {
  static constexpr int64_t kNR = k2::kWP;
  static constexpr int kCR = ::dtorch::kCR;
  static constexpr int64_t kDwBlockedTaps = ::dtorch::kDwBlockedTaps;
  static cc::ChannelTileFn pick(bool yb, int64_t ps, int noc, int mr) {
    if (yb) return channel_tile_ps<true, 2>(ps, mr);
    return noc <= 8 ? channel_tile_ps<false, 1>(ps, mr) : channel_tile_ps<false, 2>(ps, mr);
  }
  // One padded row of column phase b of layout l: dst[u] = x[u * l.sw + b - pl] (x: the input row), 0 outside [0, w).
  static void copy_phase_row(const Geo& g, const cc::PlaneLayout& l, const float* x, int64_t b, float* dst) {
    const int64_t sw = l.sw, wp = l.wp;
    const int64_t lo = g.pl - b;  // u * sw >= lo and u * sw < lo + w
    int64_t u0 = lo <= 0 ? 0 : kernels::ceil_div(lo, sw);
    int64_t u1 = lo + g.w <= 0 ? 0 : kernels::ceil_div(lo + g.w, sw);
    u0 = u0 < wp ? u0 : wp;
    u1 = u1 < wp ? (u1 < u0 ? u0 : u1) : wp;
    for (int64_t u = 0; u < u0; ++u) dst[u] = 0.0f;
    for (int64_t u = u1; u < wp; ++u) dst[u] = 0.0f;
    const int64_t first = u0 * sw + b - g.pl;  // the input column of dst[u0]
    const float* s = x + first;
    int64_t u = u0;
    if (sw == 1) {
      for (; u + 8 <= u1; u += 8, s += 8) _mm256_storeu_ps(dst + u, _mm256_loadu_ps(s));
    } else if (sw == 2) {  // 16 floats per 8 outputs, all inside the row
      for (; u + 8 <= u1 && first + (u - u0) * 2 + 16 <= g.w; u += 8, s += 16)
        _mm256_storeu_ps(dst + u, k2::even_floats(_mm256_loadu_ps(s), _mm256_loadu_ps(s + 8)));
    }
    for (; u < u1; ++u, s += sw) dst[u] = *s;
  }
  static void depthwise_blocked(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias,
                                float* y) {
    ::dtorch::depthwise_blocked(pool, g, x, w, bias, y);
  }
};
using Blocked = cc::BlockedConv2d<Conv, Tiles>;

}  // namespace
DTORCH_REGISTER_AVX2_LAYOUT_KERNEL(conv2d, DType::kFloat32, Blocked::infer, Blocked::run, Conv::prepare,
                                   Blocked::layouts);
}  // namespace dtorch
