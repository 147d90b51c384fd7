// The Advanced SIMD FMA GEMM of the neon64 kernel set. Header-only, included by kernels/neon64/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), where A is packed once (panels of kMR rows, k-major; a
// convolution packs its weights when the session loads) and B is either read in place (a row-major B whose
// column panel is whole: a 1x1 convolution's input plane) or produced block by block by the caller's `fill`
// function into a buffer on the stack (kKC rows x kNR columns, k-major, 12 KiB): convolutions write their im2col
// columns there, so the columns are never materialized in memory.
//
// Register tile: kMR = 8 rows x kNR = 12 columns = 24 accumulators of 4 floats, 3 q-registers of B and 2 of A per
// k; each FMA takes its A value from a lane (FMLA by element), so A needs no broadcasts. 29 of the 32 registers.
//
// Numerics (the neon64 set's contract, kernels/neon64/neon64.h): each C[i][j] starts at its bias (or +0.0f) and
// adds A[i][k] * B[k][j] with one fused multiply-add per k, k ascending in one float32 accumulator (spilled to C and
// reloaded between K blocks, which is exact); then the fused activation. The sequence depends only on the shapes,
// so threads change nothing; work units are (column panel, row block) pairs.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/neon.h"
#include "kernels/common/util.h"
#include "kernels/neon64/neon64.h"

namespace dtorch {
namespace kernels {
namespace neon64 {


constexpr int kMR = 8;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNV = 3;        // q-registers per tile row
constexpr int kNR = 4 * kNV;  // columns of a register tile = columns of a B block
constexpr int64_t kKC = 256;  // rows of a B block: kKC x kNR floats = 12 KiB (L1)

// One register tile (MR = 8 or 4 rows, NV = 1-3 vectors of 4 columns) over one K block: start (the bias before the
// first block, the partial sums in C before a later one), c[r] += ap[k * kMR + r] * B[k][lanes] for k < kc (k
// ascending, one FMA per k) with B[k] at bp + k * ldb (ldb = kNR for a filled block), finish: store nr <= 4 * NV
// columns of each of the mr rows, with the activation after the last block. A panel's last columns take the
// narrowest tile that holds them.
// kFull: mr == MR and nr == 4 * NV (most tiles), compiled without the checks and the edge buffer.
template <int MR, int NV, bool kFull>
void tile(bool first, bool last, int mr, int nr, int64_t kc, const float* ap, const float* bp, int64_t ldb,
          int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep) {
  static_assert(MR == 8 || MR == 4, "tiles of 8 or 4 rows");
  static_assert(NV >= 1 && NV <= kNV, "tiles of 1 to kNV vectors");
  constexpr int kCols = 4 * NV;
  if (kFull) {
    mr = MR;
    nr = kCols;
  }
  float32x4_t c[MR][NV];
  alignas(16) float edge[kNR];
  neon::tile_start<MR, NV>(first, mr, nr, i0, j0, C, ldc, ep, c, edge);
  for (int64_t k = 0; k < kc; ++k) {
    float32x4_t b[NV];
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) b[v] = vld1q_f32(bp + 4 * v);
    const float32x4_t a0 = vld1q_f32(ap);
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) {
      c[0][v] = vfmaq_laneq_f32(c[0][v], b[v], a0, 0);
      c[1][v] = vfmaq_laneq_f32(c[1][v], b[v], a0, 1);
      c[2][v] = vfmaq_laneq_f32(c[2][v], b[v], a0, 2);
      c[3][v] = vfmaq_laneq_f32(c[3][v], b[v], a0, 3);
    }
    if constexpr (MR == 8) {  // rows 4-7 from the panel's second vector
      const float32x4_t a1 = vld1q_f32(ap + 4);
      DTORCH_NEON_UNROLL
      for (int v = 0; v < NV; ++v) {
        c[4][v] = vfmaq_laneq_f32(c[4][v], b[v], a1, 0);
        c[5][v] = vfmaq_laneq_f32(c[5][v], b[v], a1, 1);
        c[6][v] = vfmaq_laneq_f32(c[6][v], b[v], a1, 2);
        c[7][v] = vfmaq_laneq_f32(c[7][v], b[v], a1, 3);
      }
    }
    ap += kMR;
    bp += ldb;
  }
  neon::tile_finish<MR, NV>(last, mr, nr, i0, j0, C, ldc, ep, c, edge);
}

// The tile for mr rows and nr columns.
inline void tile_any(int mr, int nr, bool first, bool last, int64_t kc, const float* ap, const float* bp, int64_t ldb,
                     int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep) {
  if (mr == kMR && nr == kNR) return tile<8, 3, true>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  const int nv = (nr + 3) / 4;
  if (mr > 4) {
    if (nv == 3) return tile<8, 3, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
    if (nv == 2) return tile<8, 2, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
    return tile<8, 1, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  }
  if (nv == 3) return tile<4, 3, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  if (nv == 2) return tile<4, 2, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
  tile<4, 1, false>(first, last, mr, nr, kc, ap, bp, ldb, i0, j0, C, ldc, ep);
}
static_assert(kNV == 3, "tile_any dispatches NV = 1..3");

// C (M x N, ldc) = A . B (+ epilogue) with this set's tiles (kernels/common/fma_gemm.h).
using Gemm = BlockedGemm<kMR, kNR, kKC, tile_any>;

}  // namespace neon64
}  // namespace kernels
}  // namespace dtorch
