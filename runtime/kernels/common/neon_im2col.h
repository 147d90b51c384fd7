// The im2col fills of the Arm NEON kernel sets' GEMMs (kernels/neon64, kernels/neon32): a B block of NR output
// positions (a multiple of 4) x kc kernel rows, row-major with rows NR floats apart. Header-only, included by their
// conv2d.cc only.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/common/conv_geometry.h"
#include "kernels/common/neon.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace neon {

// Columns of one image and group: B[r][q] for kernel row r = (c, i, j) and output position q = (oh, ow) is
// x[c][oh * sh - pt + i * dh][ow * sw - pl + j * dw], 0 outside the image.
template <int NR>
struct Im2col {
  const FmaConvGeometry* g;
  const float* x;  // the group's first input channel

  static constexpr int kNR = NR, kNV = NR / 4;
  static_assert(NR % 4 == 0, "panels of whole vectors");
  using Seg = ConvSeg;

  // Copies one segment of channel plane xc (plane floats) to d (the block row).
  static void copy(const float* xc, int64_t plane, int64_t sw, const Seg& s, float* d) {
    const float* src = xc + s.off;
    float* dst = d + s.q;
    int u = 0;
    if (sw == 1) {
      for (; u + 4 <= s.len; u += 4) vst1q_f32(dst + u, vld1q_f32(src + u));
    } else if (sw == 2) {  // LD2 reads 8 floats; keep inside the plane
      for (; u + 4 <= s.len && s.off + 2 * u + 8 <= plane; u += 4) vst1q_f32(dst + u, vld2q_f32(src + 2 * u).val[0]);
    }
    for (; u < s.len; ++u) dst[u] = src[u * sw];
  }

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const FmaConvGeometry& G = *g;
    ConvRun runs[kNR];
    const int n_runs = conv_panel_runs(G, j0, nr, runs, kNR);  // at most nr runs
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;  // channels with rows in [k0, k0 + kc)
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / G.kw, j = t % G.kw;
      Seg segs[kNR];
      int covered = 0;
      const int n_segs = conv_tap_segments(G, runs, n_runs, i, j, segs, &covered);
      const bool whole = covered == kNR;  // every lane is written: no zeros
      const bool plain = whole && n_segs == 1 && (G.sw == 1 || (G.sw == 2 && segs[0].off + 2 * kNR <= plane));
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        float* d = dst + r * kNR;
        if (plain) {  // one run of the whole panel
          const float* s = xc + segs[0].off;
          for (int v = 0; v < kNV; ++v)
            vst1q_f32(d + 4 * v, G.sw == 1 ? vld1q_f32(s + 4 * v) : vld2q_f32(s + 8 * v).val[0]);
          continue;
        }
        if (!whole)
          for (int v = 0; v < kNV; ++v) vst1q_f32(d + 4 * v, zero);
        for (int k = 0; k < n_segs; ++k) copy(xc, plane, G.sw, segs[k], d);
      }
    }
  }
};

// 1x1, stride 1, no padding: B[r][q] = x[r][q] (the input plane is the column matrix). The GEMMs read whole
// panels in place; this fills the last, partial one.
template <int NR>
struct Rows {
  const float* x;
  int64_t ld;  // H * W
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = x + (k0 + r) * ld + j0;
      float* d = dst + r * NR;
      for (int q = 0; q < NR; ++q) d[q] = q < nr ? s[q] : 0.0f;
    }
  }
};

}  // namespace neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
