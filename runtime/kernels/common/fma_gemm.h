// What the FMA kernel sets' GEMMs (kernels/avx2, kernels/avx512, kernels/neon64) share and no ISA shapes: the
// layout of a packed A operand and how a GEMM's work is cut into units for the threads. Header-only.
#pragma once

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Floats of a packed M x K operand A: ceil(M / P) panels of K x P (A[i][k] at panel i / P, k * P + i % P; rows past M
// are zero).
inline int64_t packed_panels_floats(int64_t M, int64_t K, int64_t P) { return ceil_div(M, P) * P * K; }

// Packs panels [t0, t1) of P rows of A, where A[i][k] = A[i * rs + k * cs].
inline void pack_panels(const float* A, int64_t rs, int64_t cs, int64_t M, int64_t K, int64_t P, int64_t t0,
                        int64_t t1, float* ap) {
  for (int64_t t = t0; t < t1; ++t) {
    float* dst = ap + t * P * K;
    const int64_t i0 = t * P;
    const int64_t rows = M - i0 < P ? M - i0 : P;
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = A + (i0 + r) * rs;
      for (int64_t k = 0; k < K; ++k) dst[k * P + r] = src[k * cs];
    }
    for (int64_t r = rows; r < P; ++r)
      for (int64_t k = 0; k < K; ++k) dst[k * P + r] = 0.0f;
  }
}

// pack_panels over all ceil(M / P) panels, split across the pool's threads when the operand is large enough to pay
// for it (the packed bytes do not depend on the split).
inline void pack_all_panels(ThreadPool* pool, const float* A, int64_t rs, int64_t cs, int64_t M, int64_t K, int64_t P,
                            float* ap) {
  const int64_t panels = ceil_div(M, P);
  if (panels <= 1 || M * K < (int64_t{1} << 15)) {
    pack_panels(A, rs, cs, M, K, P, 0, panels, ap);
    return;
  }
  parallel_chunks(pool, panels, 1, [&](int64_t t0, int64_t t1) { pack_panels(A, rs, cs, M, K, P, t0, t1, ap); });
}

// A row-major B operand a GEMM reads in place (B[k][j] = p[k * ld + j]) for its whole column panels, or none
// (p == nullptr: every block is filled).
struct DirectB {
  const float* p = nullptr;
  int64_t ld = 0;
};

// The work units of a GEMM whose C is cut into column panels of `nr` columns and `row_tiles` row tiles: a unit is
// (column panel, block of row tiles), u = panel * row_blocks + block. Few column panels for the threads: the rows
// are split too (each unit refills its B blocks). K goes in equal blocks of at most kc_max rows (288 -> 2 x 144,
// not 256 + 32: a short block pays the tile's start and finish for little work); the blocking changes no result,
// k stays in increasing order.
struct GemmSplit {
  int64_t panels, row_tiles, tiles_per_block, row_blocks, kblock;

  GemmSplit(int threads, int64_t N, int64_t nr, int64_t row_tiles_, int64_t K, int64_t kc_max)
      : panels(ceil_div(N, nr)), row_tiles(row_tiles_), tiles_per_block(row_tiles_) {
    if (threads > 1 && panels < 4 * threads) tiles_per_block = ceil_div(row_tiles, ceil_div(4 * threads, panels));
    row_blocks = ceil_div(row_tiles, tiles_per_block);
    kblock = K <= 0 ? 1 : ceil_div(K, ceil_div(K, kc_max));
  }
  int64_t units() const { return panels * row_blocks; }
  // The row tiles [*t0, *t1) of unit u, and its column panel.
  int64_t panel(int64_t u) const { return u / row_blocks; }
  void tiles(int64_t u, int64_t* t0, int64_t* t1) const {
    *t0 = (u % row_blocks) * tiles_per_block;
    *t1 = *t0 + tiles_per_block < row_tiles ? *t0 + tiles_per_block : row_tiles;
  }
};

// The block loop of the NEON and RVV sets' GEMMs: C (M x N, ldc) = A . B (+ epilogue) with A packed in panels of
// kMR rows (all of it) and B read in place from `direct` for whole column panels of kNR columns, else produced by
// fill(j0, nr, k0, kc, dst): write B[k0 + r][j0 + q] to dst[r * kNR + q] for r < kc, q < nr, and 0 for q >= nr.
// tile_any(mr, nr, first, last, kc, ap, bp, ldb, i0, j0, C, ldc, ep) runs one register tile over one K block.
template <int kMR, int kNR, int64_t kKC, typename Fill, typename Tile>
void gemm_blocks(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, DirectB direct, Fill& fill,
                 float* C, int64_t ldc, const Epilogue& ep, Tile tile_any) {
  if (M <= 0 || N <= 0) return;
  const GemmSplit sp(pool == nullptr ? 1 : pool->size(), N, kNR, ceil_div(M, kMR), K, kKC);
  parallel_chunks(pool, sp.units(), 1, [&](int64_t ub, int64_t ue) {
    alignas(16) float bbuf[kKC * kNR];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t j0 = sp.panel(u) * kNR;
      const int nr = static_cast<int>(N - j0 < kNR ? N - j0 : kNR);
      const bool in_place = direct.p != nullptr && nr == kNR;
      int64_t t0 = 0, t1 = 0;
      sp.tiles(u, &t0, &t1);
      int64_t k0 = 0;
      do {
        const int64_t kc = K - k0 < sp.kblock ? K - k0 : sp.kblock;
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
          tile_any(mr, nr, first, last, kc, ap + t * kMR * K + k0 * kMR, bp, ldb, i0, j0, C, ldc, ep);
        }
        k0 += kc;
      } while (k0 < K);
    }
  });
}

// A register tile over one K block, as gemm_blocks calls it.
using TileFn = void (*)(int mr, int nr, bool first, bool last, int64_t kc, const float* ap, const float* bp,
                        int64_t ldb, int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep);

// A set's GEMM: gemm_blocks with its tile shape and tiles (the `Gemm` of kernels/common/neon_conv.h's ConvSet).
template <int MR, int NR, int64_t KC, TileFn Tile>
struct BlockedGemm {
  static constexpr int kMR = MR, kNR = NR;
  template <typename Fill>
  static void run(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, DirectB direct, Fill&& fill,
                  float* C, int64_t ldc, const Epilogue& ep) {
    gemm_blocks<MR, NR, KC>(pool, M, N, K, ap, direct, fill, C, ldc, ep, Tile);
  }
};

// The products of the linear, matmul and conv_transpose2d kernels (kernels/common/fma_linear.h, fma_matmul.h,
// fma_conv_transpose.h) for a set whose GEMM is a BlockedGemm G (neon64, neon32, rvv): A packed in panels of G::kMR
// rows; B packed in panels of G::kNR columns (a linear's weight: each block copied from a slice of a panel, zero
// columns included) or row-major in place (whole column panels read there, a partial one copied with zero columns).
// A fused activation other than G's epilogue's is portable's function on each value (these sets have no vector
// activations).
template <class G>
struct BlockedProducts {
  static constexpr int kRowPanel = G::kMR;
  static constexpr int kColPanel = G::kNR;

  static void gemm_packed(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* bp,
                          float* C, int64_t ldc, const Epilogue& ep) {
    G::run(
        pool, M, N, K, ap, DirectB{},
        [bp, K](int64_t j0, int, int64_t k0, int64_t kc, float* dst) {
          const float* src = bp + j0 * K + k0 * G::kNR;
          for (int64_t i = 0; i < kc * G::kNR; ++i) dst[i] = src[i];
        },
        C, ldc, ep);
  }

  static void gemm_rows(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* b,
                        int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
    G::run(
        pool, M, N, K, ap, DirectB{b, ldb},
        [b, ldb](int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) {
          for (int64_t r = 0; r < kc; ++r) {
            const float* src = b + (k0 + r) * ldb + j0;
            for (int q = 0; q < G::kNR; ++q) dst[r * G::kNR + q] = q < nr ? src[q] : 0.0f;
          }
        },
        C, ldc, ep);
  }

  static void activate(const Activation& a, float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) p[i] = apply_activation(a, p[i]);
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
