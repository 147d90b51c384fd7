// The AVX-512 FMA GEMM of the avx512 kernel set. Header-only, included by kernels/avx512/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), where A is packed (pack_a: panels of P rows, k-major; P is kMR
// or kNR) and B is produced block by block by the caller's `fill` function, either straight into a 32 KiB buffer on
// the stack (kKC rows x kNR columns, k-major: convolutions write their im2col columns there, so the columns are
// never materialized in memory) or as a pointer to such a block already in memory (a kNR-row panel of a packed A,
// read as B: the transposed product). Register tile: kMR = 12 rows x kNR = 32 columns (24 zmm accumulators, 2 zmm
// of B per k, 12 broadcasts of A); a panel of 32 rows is covered by tiles of 12, 12 and 8.
//
// Numerics (the avx512 set's contract, kernels/avx512/avx512.h): each C[i][j] starts at its bias (or +0.0f) and
// adds A[i][k] * B[k][j] with one fused multiply-add per k, k ascending in one float32 accumulator (spilled to C
// and reloaded between K blocks, which is exact); then the fused activation. The sequence depends only on the
// shapes, so threads change nothing; work units are (column panel, row block) pairs.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/activation_avx512.h"
#include "kernels/avx512/avx512.h"
#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

#if defined(__clang__)
#define DTORCH_AVX512_UNROLL _Pragma("unroll")
#else
#define DTORCH_AVX512_UNROLL _Pragma("GCC unroll 16")
#endif

namespace dtorch {
namespace kernels {
namespace avx512 {

constexpr int kMR = 12;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNR = 32;        // columns of a register tile (2 zmm) = columns of a B block
constexpr int64_t kKC = 256;   // rows of a B block: kKC x kNR floats = 32 KiB (L1)

// Floats of a packed A: ceil(M / P) panels of K x P (A[i][k] at panel i / P, k * P + i % P; rows past M are zero).
inline int64_t packed_a_floats(int64_t M, int64_t K, int64_t P) { return packed_panels_floats(M, K, P); }

// Packs panels [t0, t1) of P rows of A, where A[i][k] = A[i * rs + k * cs] (kernels/common/fma_gemm.h).
inline void pack_a(const float* A, int64_t rs, int64_t cs, int64_t M, int64_t K, int64_t P, int64_t t0, int64_t t1,
                   float* ap) {
  pack_panels(A, rs, cs, M, K, P, t0, t1, ap);
}

inline __mmask16 mask16(int n) {  // lanes [0, n) set, n clamped to [0, 16]
  return n <= 0 ? __mmask16{0} : n >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << n) - 1u);
}

#define DTORCH_AVX512_INLINE inline __attribute__((always_inline))

// Where a register tile's two vectors of 16 columns go in each row of C. Normal: vector v holds columns
// [j0 + 16 v, j0 + 16 v + 16) cut at nr. Packed (conv2d.cc's phase-plane tiles): its lanes m[v] hold
// outputs that lie side by side in C from at[v] on, with lanes between them that hold none (the padded columns
// of its flat output positions): stores compress the lanes, loads of partial sums expand them.
struct Cols {
  int64_t at[2];      // C column of vector v's first output lane
  __mmask16 m[2];     // lanes of vector v that hold outputs
  __mmask16 sm[2];    // the first popcount(m[v]) lanes: where they lie in C
  bool packed;        // m[v] may have gaps (else m[v] == sm[v])

  static Cols normal(int64_t j0, int nr) {
    Cols c;
    c.at[0] = j0;
    c.at[1] = j0 + 16;
    c.m[0] = c.sm[0] = mask16(nr);
    c.m[1] = c.sm[1] = mask16(nr - 16);
    c.packed = false;
    return c;
  }
};

DTORCH_AVX512_INLINE __m512 load_cols(const float* p, const Cols& cols, int v) {
  if (!cols.packed) return _mm512_maskz_loadu_ps(cols.m[v], p);
  return _mm512_maskz_expand_ps(cols.m[v], _mm512_maskz_loadu_ps(cols.sm[v], p));
}

DTORCH_AVX512_INLINE void store_cols(float* p, const Cols& cols, int v, __m512 x) {
  // (a compress straight to memory is microcoded and slow on some CPUs: compress in registers, then store)
  if (cols.packed) x = _mm512_maskz_compress_ps(cols.m[v], x);
  _mm512_mask_storeu_ps(p, cols.sm[v], x);
}

// The accumulators of rows [i0, i0 + MR) before the first K block (the bias) or before a later one (the partial
// sums stored in C).
template <int MR>
DTORCH_AVX512_INLINE void tile_start(bool first, int64_t i0, const float* C, int64_t ldc, const Epilogue& ep,
                                     const Cols& cols, __m512 (&c)[MR][2]) {
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < MR; ++r) {
    if (!first) {
      const float* row = C + (i0 + r) * ldc;
      c[r][0] = load_cols(row + cols.at[0], cols, 0);
      c[r][1] = load_cols(row + cols.at[1], cols, 1);
    } else if (ep.bias == nullptr) {
      c[r][0] = c[r][1] = _mm512_setzero_ps();
    } else if (ep.bias_per_row) {
      c[r][0] = c[r][1] = _mm512_set1_ps(ep.bias[i0 + r]);
    } else {  // a bias per column: normal tiles only
      c[r][0] = _mm512_maskz_loadu_ps(cols.m[0], ep.bias + cols.at[0]);
      c[r][1] = _mm512_maskz_loadu_ps(cols.m[1], ep.bias + cols.at[1]);
    }
  }
}

// Stores rows [i0, i0 + MR) of the tile; `last`: after the last K block (apply the activation).
template <int MR>
DTORCH_AVX512_INLINE void tile_finish(bool last, int64_t i0, float* C, int64_t ldc, const Epilogue& ep,
                                      const Cols& cols, __m512 (&c)[MR][2]) {
  const ActKind kind = last ? ep.act.kind : ActKind::kNone;
  const bool clamp = kind == ActKind::kRelu || kind == ActKind::kRelu6 || kind == ActKind::kHardtanh;
  const __m512 lo = _mm512_set1_ps(kind == ActKind::kHardtanh ? ep.act.lo : 0.0f);
  const __m512 hi = _mm512_set1_ps(kind == ActKind::kRelu6 ? 6.0f : kind == ActKind::kHardtanh ? ep.act.hi : 0.0f);
  DTORCH_AVX512_UNROLL
  for (int r = 0; r < MR; ++r) {
    __m512 v0 = c[r][0], v1 = c[r][1];
    if (clamp) {
      // x < lo ? lo : x, then x > hi ? hi : x: max/min with the operand order that passes NaN through.
      v0 = kernels::vmax(lo, v0);
      v1 = kernels::vmax(lo, v1);
      if (kind != ActKind::kRelu) {
        v0 = kernels::vmin(hi, v0);
        v1 = kernels::vmin(hi, v1);
      }
    }
    float* row = C + (i0 + r) * ldc;
    store_cols(row + cols.at[0], cols, 0, v0);
    store_cols(row + cols.at[1], cols, 1, v1);
    if (kind != ActKind::kNone && !clamp) {  // the others over the stored values, as activate() in registers
      activate_rows(ep.act, row + cols.at[0], __builtin_popcount(cols.sm[0]));
      activate_rows(ep.act, row + cols.at[1], __builtin_popcount(cols.sm[1]));
    }
  }
}

// Where a tile reads B's rows, k = 0, 1, ... of a block: at(), then next(). A fill returns a pointer (a block of rows
// kNR floats apart, 64-byte aligned: its buffer, or a packed panel) or rows already in memory that it need not copy:
// StridedRows (ld floats apart: a pointwise convolution's input planes, ld = H * W) or IndexedRows (row k at
// base + off[k]: the phase planes). Each kind runs its own instantiation of the tiles.
struct BufRows {
  static constexpr bool kAligned = true;
  const float* p;
  const float* at() const { return p; }
  void next() { p += kNR; }
};
struct StridedRows {
  static constexpr bool kAligned = false;
  const float* p;
  int64_t ld;
  const float* at() const { return p; }
  void next() { p += ld; }
};
struct IndexedRows {
  static constexpr bool kAligned = false;
  const float* base;
  const int64_t* off;
  const float* at() const { return base + *off; }
  void next() { ++off; }
};
inline BufRows as_rows(const float* p) { return BufRows{p}; }
inline StridedRows as_rows(StridedRows r) { return r; }
inline IndexedRows as_rows(IndexedRows r) { return r; }

// One register tile over one K block: start, c[r] += ap[k * P + r] * (row k of b)[lane] for k < kc (k ascending,
// one FMA per k), finish. The accumulators stay in registers (MR x 2 zmm).
template <int MR, typename B>
void tile(bool first, bool last, int64_t kc, const float* ap, int64_t P, B b, int64_t i0, float* C, int64_t ldc,
          const Epilogue& ep, const Cols& cols) {
  __m512 c[MR][2];
  tile_start<MR>(first, i0, C, ldc, ep, cols, c);
  for (int64_t k = 0; k < kc; ++k) {
    const float* bp = b.at();
    const __m512 b0 = B::kAligned ? _mm512_load_ps(bp) : _mm512_loadu_ps(bp);
    const __m512 b1 = B::kAligned ? _mm512_load_ps(bp + 16) : _mm512_loadu_ps(bp + 16);
    DTORCH_AVX512_UNROLL
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
    }
    ap += P;
    b.next();
  }
  tile_finish<MR>(last, i0, C, ldc, ep, cols, c);
}

template <typename B>
DTORCH_AVX512_INLINE void tile_rows(int mr, bool first, bool last, int64_t kc, const float* ap, int64_t P, B b,
                                   int64_t i0, float* C, int64_t ldc, const Epilogue& ep, const Cols& cols) {
  switch (mr) {
#define DTORCH_AVX512_TILE_CASE(R) \
  case R: tile<R, B>(first, last, kc, ap, P, b, i0, C, ldc, ep, cols); break;
    DTORCH_AVX512_TILE_CASE(12)
    DTORCH_AVX512_TILE_CASE(11)
    DTORCH_AVX512_TILE_CASE(10)
    DTORCH_AVX512_TILE_CASE(9)
    DTORCH_AVX512_TILE_CASE(8)
    DTORCH_AVX512_TILE_CASE(7)
    DTORCH_AVX512_TILE_CASE(6)
    DTORCH_AVX512_TILE_CASE(5)
    DTORCH_AVX512_TILE_CASE(4)
    DTORCH_AVX512_TILE_CASE(3)
    DTORCH_AVX512_TILE_CASE(2)
    default: tile<1, B>(first, last, kc, ap, P, b, i0, C, ldc, ep, cols); break;
#undef DTORCH_AVX512_TILE_CASE
  }
}
static_assert(kMR == 12, "tile_rows dispatches MR = 1..12");

// C (M x N, ldc) = A . B (+ epilogue) with A packed in panels of P rows (pack_a, all of it; P = kMR or kNR) and B
// given block by block by fill(j0, nr, k0, kc, buf), which returns where B[k0 + r][j0 + q] lies for r < kc,
// q < kNR (columns q >= nr are read but not stored): a pointer p (at p[r * kNR + q], 64-byte aligned), either buf
// (kKC x kNR floats), which it fills, or a block already in memory; or rows in place (StridedRows, IndexedRows).
// cols_of(j0, nr) says where a tile's columns [j0, j0 + nr) go in each row of C (Cols;
// Cols::normal: columns j0 + q). Work units: (column panel, block of row tiles); each panel of P rows of A runs in
// tiles of kMR rows (32 = 12 + 12 + 8), the last ones cut at M.
template <typename Fill, typename ColsOf>
void gemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, int64_t P, Fill&& fill,
          ColsOf&& cols_of, float* C, int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  using Src = decltype(as_rows(fill(int64_t{}, int{}, int64_t{}, int64_t{}, static_cast<float*>(nullptr))));
  const int64_t tiles_per_panel = ceil_div(P, kMR);
  const GemmSplit sp(pool == nullptr ? 1 : pool->size(), N, kNR, ceil_div(M, P) * tiles_per_panel, K, kKC);
  const int64_t kblock = sp.kblock;
  parallel_chunks(pool, sp.units(), 1, [&](int64_t ub, int64_t ue) {
    alignas(64) float bbuf[kKC * kNR];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t j0 = sp.panel(u) * kNR;
      const int nr = static_cast<int>(N - j0 < kNR ? N - j0 : kNR);
      const Cols cols = cols_of(j0, nr);
      if ((cols.m[0] | cols.m[1]) == 0) continue;  // no column of this panel is an output
      int64_t t0 = 0, t1 = 0;
      sp.tiles(u, &t0, &t1);
      int64_t k0 = 0;
      do {
        const int64_t kc = K - k0 < kblock ? K - k0 : kblock;
        const Src b = kc > 0 ? as_rows(fill(j0, nr, k0, kc, static_cast<float*>(bbuf))) : Src{};  // (kc = 0: not read)
        const bool first = k0 == 0, last = k0 + kc >= K;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t a = t / tiles_per_panel, sub = (t % tiles_per_panel) * kMR;
          const int64_t i0 = a * P + sub;
          const int64_t rows = (P - sub < kMR ? P - sub : kMR);
          const int mr = static_cast<int>(M - i0 < rows ? M - i0 : rows);
          if (mr <= 0) continue;
          tile_rows<Src>(mr, first, last, kc, ap + a * P * K + k0 * P + sub, P, b, i0, C, ldc, ep, cols);
        }
        k0 += kc;
      } while (k0 < K);
    }
  });
}

template <typename Fill>
void gemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, int64_t P, Fill&& fill, float* C,
          int64_t ldc, const Epilogue& ep) {
  gemm(pool, M, N, K, ap, P, fill, [](int64_t j0, int nr) { return Cols::normal(j0, nr); }, C, ldc, ep);
}

// The products of the set's linear and matmul kernels (kernels/common/fma_linear.h, fma_matmul.h): A packed in
// panels of kMR rows; B either packed in panels of kNR columns (a linear's weight: a block of B is a slice of a
// panel, read in place) or row-major in place (full column panels read as strided rows, a partial one copied into
// the block buffer with zero columns).
struct Products {
  static constexpr int kRowPanel = kMR;
  static constexpr int kColPanel = kNR;

  static void activate(const Activation& a, float* p, int64_t n) { activate_rows(a, p, n); }

  static void gemm_packed(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* bp,
                          float* C, int64_t ldc, const Epilogue& ep) {
    gemm(
        pool, M, N, K, ap, kMR,
        [bp, K](int64_t j0, int, int64_t k0, int64_t, float*) -> const float* { return bp + j0 * K + k0 * kNR; }, C,
        ldc, ep);
  }

  static void gemm_rows(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* ap, const float* b,
                        int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
    gemm(
        pool, M, N, K, ap, kMR,
        [b, ldb](int64_t j0, int nr, int64_t k0, int64_t kc, float* buf) {
          if (nr == kNR) return StridedRows{b + k0 * ldb + j0, ldb};
          const __mmask16 m0 = mask16(nr), m1 = mask16(nr - 16);
          for (int64_t r = 0; r < kc; ++r) {
            const float* src = b + (k0 + r) * ldb + j0;
            _mm512_store_ps(buf + r * kNR, _mm512_maskz_loadu_ps(m0, src));
            _mm512_store_ps(buf + r * kNR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
          }
          return StridedRows{buf, kNR};
        },
        C, ldc, ep);
  }
};

}  // namespace avx512
}  // namespace kernels
}  // namespace dtorch
