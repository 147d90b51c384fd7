// The NEON GEMM of the neon32 kernel set (armv7-a). Header-only, included by kernels/neon32/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), A packed once in panels of kMR rows (the weights, at load), B read
// in place (a 1x1 convolution's input plane) or filled block by block into a buffer on the stack (kKC rows x kNR
// columns, 8 KiB): kernels/common/neon.h's block loop.
//
// Register tile: kMR = 4 rows x kNR = 8 columns = 8 accumulators of 4 floats, 2 q-registers of B and 4 of A per k
// (one load, each value broadcast: armv7 NEON has no fused multiply-add by element): 14 of armv7's 16 q-registers.
//
// Numerics (kernels/neon32/neon32.h): each C[i][j] starts at its bias (or +0.0f) and adds A[i][k] * B[k][j] with
// one fused multiply-add (VFMA) per k, k ascending in one float32 accumulator (spilled to C and reloaded between K
// blocks, which is exact); then the fused activation. The sequence depends only on the shapes, so threads change
// nothing.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/neon.h"
#include "kernels/common/util.h"
#include "kernels/neon32/neon32.h"

namespace dtorch {
namespace kernels {
namespace neon32 {


constexpr int kMR = 4;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNV = 2;        // q-registers per tile row
constexpr int kNR = 4 * kNV;  // columns of a register tile = columns of a B block
constexpr int64_t kKC = 256;  // rows of a B block: kKC x kNR floats = 8 KiB

// One register tile (kMR rows, NV = 1 or 2 vectors of 4 columns) over one K block: start (the bias before the first
// block, the partial sums in C before a later one), c[r] += ap[k * kMR + r] * B[k][lanes] for k < kc (k ascending)
// with B[k] at bp + k * ldb, finish: store nr <= 4 * NV columns of the mr rows, with the activation after the last
// block. kFull: mr == kMR and nr == 4 * NV.
template <int NV, bool kFull>
void tile(bool first, bool last, int mr, int nr, int64_t kc, const float* ap, const float* bp, int64_t ldb,
          int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep) {
  static_assert(NV == 1 || NV == 2, "tiles of 1 or 2 vectors");
  constexpr int kCols = 4 * NV;
  if (kFull) {
    mr = kMR;
    nr = kCols;
  }
  float32x4_t c[kMR][NV];
  alignas(16) float edge[kNR];
  neon::tile_start<kMR, NV>(first, mr, nr, i0, j0, C, ldc, ep, c, edge);
  for (int64_t k = 0; k < kc; ++k) {
    float32x4_t b[NV];
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) b[v] = vld1q_f32(bp + 4 * v);
    const float32x4_t a = vld1q_f32(ap);
    const float32x2_t lo = vget_low_f32(a), hi = vget_high_f32(a);
    const float32x4_t a0 = vdupq_lane_f32(lo, 0), a1 = vdupq_lane_f32(lo, 1);
    const float32x4_t a2 = vdupq_lane_f32(hi, 0), a3 = vdupq_lane_f32(hi, 1);
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) {
      c[0][v] = vfmaq_f32(c[0][v], b[v], a0);
      c[1][v] = vfmaq_f32(c[1][v], b[v], a1);
      c[2][v] = vfmaq_f32(c[2][v], b[v], a2);
      c[3][v] = vfmaq_f32(c[3][v], b[v], a3);
    }
    ap += kMR;
    bp += ldb;
  }
  neon::tile_finish<kMR, NV>(last, mr, nr, i0, j0, C, ldc, ep, c, edge);
}

// The tile for mr rows and nr columns.
inline void tile_any(int mr, int nr, bool first, bool last, int64_t kc, const float* ap, const float* bp, int64_t ldb,
                     int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep) {
  if (mr == kMR && nr == kNR) return tile<2, true>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  if (nr > 4) return tile<2, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  tile<1, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
}
static_assert(kNV == 2, "tile_any dispatches NV = 1, 2");

// C (M x N, ldc) = A . B (+ epilogue) with this set's tiles (kernels/common/fma_gemm.h).
using Gemm = BlockedGemm<kMR, kNR, kKC, tile_any>;

}  // namespace neon32
}  // namespace kernels
}  // namespace dtorch
