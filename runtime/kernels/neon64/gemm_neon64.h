// The Advanced SIMD FMA GEMM of the neon64 kernel set. Header-only, included by kernels/neon64/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), where A is packed once (pack_a: panels of kMR rows, k-major; a
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
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"
#include "kernels/neon64/neon64.h"

#if defined(__clang__)
#define DTORCH_NEON_UNROLL _Pragma("unroll")
#else
#define DTORCH_NEON_UNROLL _Pragma("GCC unroll 16")
#endif
#define DTORCH_NEON_INLINE inline __attribute__((always_inline))

namespace dtorch {
namespace kernels {
namespace neon64 {

constexpr int kMR = 8;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNV = 3;        // q-registers per tile row
constexpr int kNR = 4 * kNV;  // columns of a register tile = columns of a B block
constexpr int64_t kKC = 256;  // rows of a B block: kKC x kNR floats = 12 KiB (L1)

// Floats of the packed A: ceil(M / kMR) panels of K x kMR (A[i][k] at panel i / kMR, k * kMR + i % kMR; rows past
// M are zero).
inline int64_t packed_a_floats(int64_t M, int64_t K) { return ceil_div(M, kMR) * kMR * K; }

// Packs panels [t0, t1) of A, where A[i][k] = A[i * rs + k * cs].
inline void pack_a(const float* A, int64_t rs, int64_t cs, int64_t M, int64_t K, int64_t t0, int64_t t1, float* ap) {
  for (int64_t t = t0; t < t1; ++t) {
    float* dst = ap + t * kMR * K;
    const int64_t i0 = t * kMR;
    const int rows = static_cast<int>(M - i0 < kMR ? M - i0 : kMR);
    for (int r = 0; r < rows; ++r) {
      const float* src = A + (i0 + r) * rs;
      for (int64_t k = 0; k < K; ++k) dst[k * kMR + r] = src[k * cs];
    }
    for (int r = rows; r < kMR; ++r)
      for (int64_t k = 0; k < K; ++k) dst[k * kMR + r] = 0.0f;
  }
}

// x < lo ? lo : x and x > hi ? hi : x with NaN passed through (FMAX/FMIN return NaN when either operand is NaN,
// and a NaN bound never occurs: the bounds are 0, 6 or finite hardtanh limits).
DTORCH_NEON_INLINE float32x4_t clamp_lo(float32x4_t lo, float32x4_t x) { return vmaxq_f32(lo, x); }
DTORCH_NEON_INLINE float32x4_t clamp_hi(float32x4_t hi, float32x4_t x) { return vminq_f32(hi, x); }

// The fused activation as the clamp [lo, hi] every output goes through in registers (relu: [0, inf], relu6:
// [0, 6], hardtanh: its bounds; none and the other activations: [-inf, inf], which changes nothing, NaN included),
// and whether the activation is another one, applied to the stored values afterwards (`after`).
struct Clamp {
  float32x4_t lo, hi;
  bool after;
  explicit Clamp(const Activation& a) {
    const float inf = __builtin_inff();
    const bool relu = a.kind == ActKind::kRelu, relu6 = a.kind == ActKind::kRelu6, ht = a.kind == ActKind::kHardtanh;
    lo = vdupq_n_f32(relu || relu6 ? 0.0f : ht ? a.lo : -inf);
    hi = vdupq_n_f32(relu6 ? 6.0f : ht ? a.hi : inf);
    after = !(relu || relu6 || ht || a.kind == ActKind::kNone);
  }
  DTORCH_NEON_INLINE float32x4_t operator()(float32x4_t x) const { return clamp_hi(hi, clamp_lo(lo, x)); }
};

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
  DTORCH_NEON_UNROLL
  for (int r = 0; r < MR; ++r) {
    const float* p = C + (i0 + r) * ldc + j0;
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) {
      if (r >= mr) {
        c[r][v] = vdupq_n_f32(0.0f);
      } else if (!first) {
        if (nr == kCols) {
          c[r][v] = vld1q_f32(p + 4 * v);
        } else {
          if (v == 0)
            for (int q = 0; q < kCols; ++q) edge[q] = q < nr ? p[q] : 0.0f;
          c[r][v] = vld1q_f32(edge + 4 * v);
        }
      } else if (ep.bias == nullptr) {
        c[r][v] = vdupq_n_f32(0.0f);
      } else if (ep.bias_per_row) {
        c[r][v] = vdupq_n_f32(ep.bias[i0 + r]);
      } else {
        if (v == 0)
          for (int q = 0; q < kCols; ++q) edge[q] = q < nr ? ep.bias[j0 + q] : 0.0f;
        c[r][v] = vld1q_f32(edge + 4 * v);
      }
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    float32x4_t b[NV];
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) b[v] = vld1q_f32(bp + 4 * v);
    const float32x4_t a0 = vld1q_f32(ap);
    if constexpr (MR == 8) {
      const float32x4_t a1 = vld1q_f32(ap + 4);
      DTORCH_NEON_UNROLL
      for (int v = 0; v < NV; ++v) {
        c[0][v] = vfmaq_laneq_f32(c[0][v], b[v], a0, 0);
        c[1][v] = vfmaq_laneq_f32(c[1][v], b[v], a0, 1);
        c[2][v] = vfmaq_laneq_f32(c[2][v], b[v], a0, 2);
        c[3][v] = vfmaq_laneq_f32(c[3][v], b[v], a0, 3);
        c[4][v] = vfmaq_laneq_f32(c[4][v], b[v], a1, 0);
        c[5][v] = vfmaq_laneq_f32(c[5][v], b[v], a1, 1);
        c[6][v] = vfmaq_laneq_f32(c[6][v], b[v], a1, 2);
        c[7][v] = vfmaq_laneq_f32(c[7][v], b[v], a1, 3);
      }
    } else {
      DTORCH_NEON_UNROLL
      for (int v = 0; v < NV; ++v) {
        c[0][v] = vfmaq_laneq_f32(c[0][v], b[v], a0, 0);
        c[1][v] = vfmaq_laneq_f32(c[1][v], b[v], a0, 1);
        c[2][v] = vfmaq_laneq_f32(c[2][v], b[v], a0, 2);
        c[3][v] = vfmaq_laneq_f32(c[3][v], b[v], a0, 3);
      }
    }
    ap += kMR;
    bp += ldb;
  }
  const Activation act = last ? ep.act : Activation{};
  const Clamp cl(act);
  // r is a constant in every copy of this loop body (unrolled), so the accumulators never leave the registers.
  DTORCH_NEON_UNROLL
  for (int r = 0; r < MR; ++r) {
    if (r >= mr) break;
    float* p = C + (i0 + r) * ldc + j0;
    DTORCH_NEON_UNROLL
    for (int v = 0; v < NV; ++v) {
      const float32x4_t x = cl(c[r][v]);
      if (nr == kCols) {
        vst1q_f32(p + 4 * v, x);
      } else {
        vst1q_f32(edge + 4 * v, x);
      }
    }
    if (nr != kCols)
      for (int q = 0; q < nr; ++q) p[q] = edge[q];
    if (cl.after) bias_activation(act, 0.0f, p, nr);
  }
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

// A row-major B operand read in place (B[k][j] = p[k * ld + j]), or none (p == nullptr: every block is filled).
struct DirectB {
  const float* p = nullptr;
  int64_t ld = 0;
};

// C (M x N, ldc) = A . B (+ epilogue) with A packed (pack_a, all of it) and B read in place from `direct` for whole
// column panels, else produced by fill(j0, nr, k0, kc, dst): write B[k0 + r][j0 + q] to dst[r * kNR + q] for
// r < kc, q < nr, and 0 for q >= nr.
template <typename Fill>
void gemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, DirectB direct, Fill&& fill, float* C,
          int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  const int threads = pool == nullptr ? 1 : pool->size();
  const int64_t panels = ceil_div(N, kNR), row_tiles = ceil_div(M, kMR);
  // Few column panels for the threads: split the rows too (each unit refills its B blocks).
  int64_t tiles_per_block = row_tiles;
  if (threads > 1 && panels < 4 * threads) {
    const int64_t want_blocks = ceil_div(4 * threads, panels);
    tiles_per_block = ceil_div(row_tiles, want_blocks);
  }
  const int64_t row_blocks = ceil_div(row_tiles, tiles_per_block);
  // K in equal blocks of at most kKC rows (288 -> 2 x 144, not 256 + 32); k stays in increasing order.
  const int64_t kblock = K <= 0 ? 1 : ceil_div(K, ceil_div(K, kKC));
  parallel_chunks(pool, panels * row_blocks, 1, [&](int64_t ub, int64_t ue) {
    alignas(16) float bbuf[kKC * kNR];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t p = u / row_blocks, rb = u % row_blocks;
      const int64_t j0 = p * kNR;
      const int nr = static_cast<int>(N - j0 < kNR ? N - j0 : kNR);
      const bool in_place = direct.p != nullptr && nr == kNR;
      const int64_t t0 = rb * tiles_per_block;
      const int64_t t1 = t0 + tiles_per_block < row_tiles ? t0 + tiles_per_block : row_tiles;
      int64_t k0 = 0;
      do {
        const int64_t kc = K - k0 < kblock ? K - k0 : kblock;
        const float* bp = bbuf;
        int64_t ldb = kNR;
        if (in_place) {
          bp = direct.p + k0 * direct.ld + j0;
          ldb = direct.ld;
        } else if (kc > 0) {
          fill(j0, nr, k0, kc, bbuf);
        }
        const bool first = k0 == 0, last = k0 + kc >= K;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = t * kMR;
          const int mr = static_cast<int>(M - i0 < kMR ? M - i0 : kMR);
          const float* at = ap + t * kMR * K + k0 * kMR;
          tile_any(mr, nr, first, last, kc, at, bp, ldb, i0, j0, C, ldc, ep);
        }
        k0 += kc;
      } while (k0 < K);
    }
  });
}

}  // namespace neon64
}  // namespace kernels
}  // namespace dtorch
