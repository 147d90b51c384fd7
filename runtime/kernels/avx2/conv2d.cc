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
// Depthwise convolutions (one input and one output channel per group): direct kernels, 8 output columns per
// vector, taps in (row, column) order with one FMA each starting from the bias: for 3x3 undilated ones with column
// stride 1 or 2, blocks of up to 6 independent vectors with the weights in registers (dw3x3_planes); others 4 rows
// at a time with masked loads or gathers per tap (depthwise_plane).
// Threads split GEMM work units or output planes only.
// Planes whose positions do not fit 32-bit gather indices run the best bit-exact kernel (x86 or portable).
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/depthwise_fma.h"
#include "kernels/avx2/gemm_fma.h"
#include "kernels/common/activation.h"
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
          const __m256i lo_l = _mm256_set1_epi32(la), hi_l = _mm256_set1_epi32(lb);
          L.mo = _mm256_andnot_si256(_mm256_cmpgt_epi32(lo_l, lanes), _mm256_cmpgt_epi32(hi_l, lanes));
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

// 1x1, stride 1, no padding: B[r][q] = x[r][q] (the input plane is the column matrix).
struct Rows {
  const float* x;
  int64_t ld;  // H * W
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    constexpr int kNR = k2::kNR, kNV = k2::kNV;
    const k2::RowMasks mk(nr);
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = x + (k0 + r) * ld + j0;
      if (nr == kNR) {
        for (int v = 0; v < kNV; ++v) _mm256_store_ps(dst + r * kNR + 8 * v, _mm256_loadu_ps(s + 8 * v));
      } else {
        for (int v = 0; v < kNV; ++v) _mm256_store_ps(dst + r * kNR + 8 * v, _mm256_maskload_ps(s + 8 * v, mk.m[v]));
      }
    }
  }
};

// The avx2 pieces of kernels/common/fma_conv.h's conv2d.
struct Avx2 {
  static constexpr int64_t kPanel = k2::kMR;
  static size_t work_floats(const Geo&) { return 0; }
  static bool takes_depthwise(const Geo&) { return true; }
  static void depthwise(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
    k2::depthwise(pool, g, x, w, bias, y);
  }
  static void gemm_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                         float* yg, float*) {
    const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
    ep.bias_per_row = true;
    if (g.pointwise)
      k2::gemm(pool, g.og, ohw, kg, wg, Rows{xg, ohw}, yg, ohw, ep);
    else
      k2::gemm(pool, g.og, ohw, kg, wg, Im2col{&g, xg}, yg, ohw, ep);
  }
};
using Conv = kernels::FmaConv2d<Avx2>;

}  // namespace
DTORCH_REGISTER_AVX2_KERNEL(conv2d, DType::kFloat32, Conv::infer, Conv::run, Conv::prepare);
}  // namespace dtorch
