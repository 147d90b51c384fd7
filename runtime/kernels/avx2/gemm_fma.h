// The AVX2 FMA GEMM of the avx2 kernel set. Header-only, included by kernels/avx2/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), where A is packed once (pack_a: panels of kMR rows, k-major; a
// convolution packs its weights when the session loads) and B is produced block by block by the caller's `fill`
// function straight into a buffer on the stack (kKC rows x kNR columns, k-major, 24 KiB): convolutions write their
// im2col columns there, so the columns are never materialized in memory. Register tile: kMR = 4 rows x kNR = 24
// columns (12 ymm accumulators, 3 ymm of B per k, 4 broadcasts of A); 4 divides the channel counts networks use.
// A's panels may be wider than a tile (`apw` floats per k, a multiple of kMR): the set packs convolution weights in
// panels of kWP = 16 output channels, which the channel-major tiles (kernels/avx2/conv2d.cc) read as two vectors
// per k and the GEMM's tiles as four quarters.
//
// Numerics (the avx2 set's contract, kernels/avx2/avx2.h): each C[i][j] starts at its bias (or +0.0f) and adds
// A[i][k] * B[k][j] with one fused multiply-add per k, k ascending in one float32 accumulator (spilled to C and
// reloaded between K blocks, which is exact); then the fused activation. The sequence depends only on the shapes,
// so threads change nothing; work units are (column panel, row block) pairs.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/activation_avx2.h"
#include "kernels/avx2/avx2.h"
#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

#if defined(__clang__)
#define DTORCH_AVX2_UNROLL _Pragma("unroll")
#else
#define DTORCH_AVX2_UNROLL _Pragma("GCC unroll 16")
#endif
#define DTORCH_AVX2_INLINE inline __attribute__((always_inline))

namespace dtorch {
namespace kernels {
namespace avx2 {

constexpr int kMR = 4;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNV = 3;        // ymm per tile row
constexpr int kNR = 8 * kNV;  // columns of a register tile = columns of a B block
constexpr int64_t kKC = 256;  // rows of a B block: kKC x kNR floats = 24 KiB (L1)
constexpr int kWP = 16;       // rows of a packed weight panel (four tiles' rows)

// The packed A: panels of kMR rows (kernels/common/fma_gemm.h).
inline int64_t packed_a_floats(int64_t M, int64_t K) { return packed_panels_floats(M, K, kMR); }
inline void pack_a(const float* A, int64_t rs, int64_t cs, int64_t M, int64_t K, int64_t t0, int64_t t1, float* ap) {
  pack_panels(A, rs, cs, M, K, kMR, t0, t1, ap);
}

// Lanes [0, n) set (n clamped to [0, 8]): the mask of _mm256_maskload_ps / _mm256_maskstore_ps, which never touch
// masked-off lanes.
DTORCH_AVX2_INLINE __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Masks of the kNV vectors of a row of nr valid columns.
struct RowMasks {
  __m256i m[kNV];
  explicit RowMasks(int nr) {
    for (int v = 0; v < kNV; ++v) m[v] = lane_mask(nr - 8 * v);
  }
};

// max/min with maxps/minps semantics (the second operand when either is NaN): max(lo, x) keeps a NaN x.
DTORCH_AVX2_INLINE __m256 clamp_lo(__m256 lo, __m256 x) { return _mm256_max_ps(lo, x); }
DTORCH_AVX2_INLINE __m256 clamp_hi(__m256 hi, __m256 x) { return _mm256_min_ps(hi, x); }

// The accumulators of rows [i0, i0 + MR) x columns [j0, j0 + kNR) before the first K block (the bias) or before a
// later one (the partial sums stored in C).
template <int MR>
DTORCH_AVX2_INLINE void tile_start(bool first, int64_t i0, int64_t j0, const float* C, int64_t ldc,
                                   const Epilogue& ep, const RowMasks& mk, __m256 (&c)[MR][kNV]) {
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < MR; ++r) {
    DTORCH_AVX2_UNROLL
    for (int v = 0; v < kNV; ++v) {
      if (!first)
        c[r][v] = _mm256_maskload_ps(C + (i0 + r) * ldc + j0 + 8 * v, mk.m[v]);
      else if (ep.bias == nullptr)
        c[r][v] = _mm256_setzero_ps();
      else if (ep.bias_per_row)
        c[r][v] = _mm256_set1_ps(ep.bias[i0 + r]);
      else
        c[r][v] = _mm256_maskload_ps(ep.bias + j0 + 8 * v, mk.m[v]);
    }
  }
}

// Stores rows [i0, i0 + MR) x columns [j0, j0 + nr) (a partial panel's lanes with store_lanes: no masked stores);
// `last`: after the last K block (apply the activation).
template <int MR>
DTORCH_AVX2_INLINE void tile_finish(bool last, int nr, int64_t i0, int64_t j0, float* C, int64_t ldc,
                                    const Epilogue& ep, __m256 (&c)[MR][kNV]) {
  const ActKind kind = last ? ep.act.kind : ActKind::kNone;
  const bool clamp = kind == ActKind::kRelu || kind == ActKind::kRelu6 || kind == ActKind::kHardtanh;
  const __m256 lo = _mm256_set1_ps(kind == ActKind::kHardtanh ? ep.act.lo : 0.0f);
  const __m256 hi = _mm256_set1_ps(kind == ActKind::kRelu6 ? 6.0f : kind == ActKind::kHardtanh ? ep.act.hi : 0.0f);
  DTORCH_AVX2_UNROLL
  for (int r = 0; r < MR; ++r) {
    float* p = C + (i0 + r) * ldc + j0;
    DTORCH_AVX2_UNROLL
    for (int v = 0; v < kNV; ++v) {
      __m256 x = c[r][v];
      if (clamp) {  // x < lo ? lo : x, then x > hi ? hi : x, passing NaN through
        x = clamp_lo(lo, x);
        if (kind != ActKind::kRelu) x = clamp_hi(hi, x);
      }
      if (nr == kNR)
        _mm256_storeu_ps(p + 8 * v, x);
      else if (8 * v < nr)
        store_lanes(p + 8 * v, x, nr - 8 * v);
    }
    if (kind != ActKind::kNone && !clamp) activate_rows(ep.act, p, nr);  // as activate() in registers
  }
}

// Where a tile finds row k of its B block: a filled block (kNR floats a row) or rows anywhere in memory (a base
// plus an offset per k: the direct convolution's shifted input rows, kernels/avx2/conv2d.cc).
struct BlockRows {
  const float* p;
  DTORCH_AVX2_INLINE const float* operator()(int64_t k) const { return p + k * kNR; }
};
struct OffsetRows {
  const float* base;
  const int64_t* off;
  DTORCH_AVX2_INLINE const float* operator()(int64_t k) const { return base + off[k]; }
};

// One register tile over one K block: start, c[r] += ap[k * apw + r] * B[k][lane] for k < kc (k ascending, one
// FMA per k), finish. The accumulators stay in registers (MR x kNV ymm).
template <int MR, class Rows>
void tile(bool first, bool last, int nr, int64_t kc, const float* ap, int64_t apw, Rows rows, int64_t i0, int64_t j0,
          float* C, int64_t ldc, const Epilogue& ep, const RowMasks& mk) {
  __m256 c[MR][kNV];
  tile_start<MR>(first, i0, j0, C, ldc, ep, mk, c);
  for (int64_t k = 0; k < kc; ++k) {
    const float* bp = rows(k);
    __m256 b[kNV];
    DTORCH_AVX2_UNROLL
    for (int v = 0; v < kNV; ++v) b[v] = _mm256_loadu_ps(bp + 8 * v);
    DTORCH_AVX2_UNROLL
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
      DTORCH_AVX2_UNROLL
      for (int v = 0; v < kNV; ++v) c[r][v] = _mm256_fmadd_ps(a, b[v], c[r][v]);
    }
    ap += apw;
  }
  tile_finish<MR>(last, nr, i0, j0, C, ldc, ep, c);
}

template <class Rows>
void tile_rows(int mr, bool first, bool last, int nr, int64_t kc, const float* ap, int64_t apw, Rows rows,
               int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep, const RowMasks& mk) {
  switch (mr) {
    case 4: tile<4>(first, last, nr, kc, ap, apw, rows, i0, j0, C, ldc, ep, mk); break;
    case 3: tile<3>(first, last, nr, kc, ap, apw, rows, i0, j0, C, ldc, ep, mk); break;
    case 2: tile<2>(first, last, nr, kc, ap, apw, rows, i0, j0, C, ldc, ep, mk); break;
    default: tile<1>(first, last, nr, kc, ap, apw, rows, i0, j0, C, ldc, ep, mk); break;
  }
}

// Where tile t (rows [t * kMR, t * kMR + kMR)) finds K block k0 of A packed in panels of apw rows.
DTORCH_AVX2_INLINE const float* tile_a(const float* ap, int64_t apw, int64_t K, int64_t t, int64_t k0) {
  const int64_t row = t * kMR;
  return ap + (row / apw) * apw * K + k0 * apw + row % apw;
}
static_assert(kMR == 4, "tile_rows dispatches MR = 1..4");

// Bytes of L2 the block loop plans for (half of the 512 KiB a Zen 2 or Skylake-SP core has).
constexpr int64_t kL2Bytes = 256 * 1024;

// Units (kernels/common/fma_gemm.h's GemmSplit) run one after the other, each over all its K blocks, while the
// packed A fits in L2 (it is then read from there for every column panel). A larger A (deep layers: 256 x 2304
// floats is 2.3 MiB) would stream from memory once per panel; then a thread takes its units in groups whose C
// tiles stay in L2 and runs K block by K block over the group, so each K block of A is read once per group. The
// order changes no result: every C element still adds its k in increasing order (partial sums spilled to C and
// reloaded, which is exact).
inline int64_t units_per_group(const GemmSplit& sp, int64_t K) {
  const int64_t rows = sp.tiles_per_block * kMR;
  if (rows * K * static_cast<int64_t>(sizeof(float)) <= kL2Bytes) return 1;
  const int64_t c_bytes = rows * kNR * static_cast<int64_t>(sizeof(float));
  return kL2Bytes / c_bytes > 1 ? kL2Bytes / c_bytes : 1;
}

// C (M x N, ldc) = A . B (+ epilogue) with A packed in panels of apw rows (pack_a: apw = kMR; convolution weights:
// kWP), all of it, and B produced by
// fill(j0, nr, k0, kc, dst): write B[k0 + r][j0 + q] to dst[r * kNR + q] for r < kc, q < nr, and 0 for q >= nr.
template <typename Fill>
void gemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, int64_t apw, Fill&& fill, float* C,
          int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  const GemmSplit sp(pool == nullptr ? 1 : pool->size(), N, kNR, ceil_div(M, kMR), K, kKC);
  const int64_t kblock = sp.kblock, group = units_per_group(sp, K);
  parallel_chunks(pool, sp.units(), 1, [&](int64_t ub, int64_t ue) {
    alignas(32) float bbuf[kKC * kNR];
    for (int64_t gb = ub; gb < ue; gb += group) {
      const int64_t ge = ue - gb < group ? ue : gb + group;
      int64_t k0 = 0;
      do {
        const int64_t kc = K - k0 < kblock ? K - k0 : kblock;
        const bool first = k0 == 0, last = k0 + kc >= K;
        for (int64_t u = gb; u < ge; ++u) {
          const int64_t j0 = sp.panel(u) * kNR;
          const int nr = static_cast<int>(N - j0 < kNR ? N - j0 : kNR);
          const RowMasks mk(nr);
          int64_t t0 = 0, t1 = 0;
          sp.tiles(u, &t0, &t1);
          if (kc > 0) fill(j0, nr, k0, kc, bbuf);
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t i0 = t * kMR;
            const int mr = static_cast<int>(M - i0 < kMR ? M - i0 : kMR);
            tile_rows(mr, first, last, nr, kc, tile_a(ap, apw, K, t, k0), apw, BlockRows{bbuf}, i0, j0, C, ldc, ep, mk);
          }
        }
        k0 += kc;
      } while (k0 < K);
    }
  });
}

// The products of the set's linear and matmul kernels (kernels/common/fma_linear.h, fma_matmul.h): A packed in
// panels of kMR rows; B either packed in panels of kNR columns (a linear's weight: a block is a copy of a slice of a
// panel, zero columns included) or row-major in place (each block copied, zero columns past N).
struct Products {
  static constexpr int kRowPanel = kMR;
  static constexpr int kColPanel = kNR;

  static void activate(const Activation& a, float* p, int64_t n) { activate_rows(a, p, n); }

  static void gemm_packed(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* bp,
                          float* C, int64_t ldc, const Epilogue& ep) {
    gemm(
        pool, M, N, K, ap, kMR,
        [bp, K](int64_t j0, int, int64_t k0, int64_t kc, float* dst) {
          const float* src = bp + j0 * K + k0 * kNR;
          for (int64_t i = 0; i < kc * kNR; i += 8) _mm256_store_ps(dst + i, _mm256_loadu_ps(src + i));
        },
        C, ldc, ep);
  }

  static void gemm_rows(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* b,
                        int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
    gemm(
        pool, M, N, K, ap, kMR,
        [b, ldb](int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) {
          const RowMasks mk(nr);
          for (int64_t r = 0; r < kc; ++r) {
            const float* src = b + (k0 + r) * ldb + j0;
            for (int v = 0; v < kNV; ++v)
              _mm256_store_ps(dst + r * kNR + 8 * v,
                              nr == kNR ? _mm256_loadu_ps(src + 8 * v) : _mm256_maskload_ps(src + 8 * v, mk.m[v]));
          }
        },
        C, ldc, ep);
  }
};

}  // namespace avx2
}  // namespace kernels
}  // namespace dtorch
