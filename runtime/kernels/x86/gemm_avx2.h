// The AVX2 GEMMs of the x86 kernel set (conv2d, matmul, linear). Header-only, included by kernels/x86/*.cc only.
//
// Numerics: the same accumulation order as the portable GEMMs (kernels/common/gemm.h), so the results are
// bit-identical to the portable kernel set (and within the portable 1e-5 x output scale of eager):
//   * gemm_nn: every C[i][j] starts at +0.0f and adds round(A[i][k] * B[k][j]) for k = 0, 1, ..., K-1 in one
//     float32 accumulator (vmulps then vaddps: no FMA, which would round differently from portable). A register
//     tile holds kMR x kNR independent accumulators (6 rows x 2 ymm); edge tiles use masked loads/stores or
//     zero-padded panels, which only add lanes that are thrown away.
//   * gemm_nt (linear): one ymm accumulator per output, lane l adding the products of k = l, l + 8, ... (k <
//     8 * floor(K / 8)), lanes combined as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), then the K mod 8
//     remaining k added in increasing order: portable's 8-lane order exactly.
//   * Epilogue: bias (added only when nonzero, per row) or per-column bias, then the fused activation
//     (kernels/common/activation.h), as portable.
// FMA would be allowed by the kernel-set contract (DESIGN.md "Numerics"), but it is not used: keeping portable's
// rounding keeps the x86 and portable sets interchangeable bit for bit (tests/runtime/kernels pins that).
// Threads split only independent output tiles, so the bits do not depend on the thread count.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

#if defined(__clang__)
#define DTORCH_X86_UNROLL _Pragma("unroll")
#else
#define DTORCH_X86_UNROLL _Pragma("GCC unroll 16")
#endif

namespace dtorch {
namespace kernels {
namespace x86 {

constexpr int kMR = 6;       // rows of a register tile
constexpr int kNR = 16;      // columns of a register tile (2 ymm) = width of a packed B panel
constexpr int64_t kMB = 48;  // rows of a work unit (8 register tiles)
constexpr int64_t kNB = 128; // columns of a work unit (8 panels)

// Floats of a packed K x N B operand: ceil(N / kNR) panels of K x kNR (panel t holds columns [t*kNR, t*kNR+kNR),
// k-major: B[k][j] at panel + k * kNR + j % kNR; pad columns must be finite, e.g. 0).
inline int64_t packed_b_floats(int64_t K, int64_t N) { return ceil_div(N, kNR) * kNR * K; }

// MR x 16 tile: c[r][h] lanes = sum over k ascending of A[r * lda + k] * B[k * ldb + 8h + lane].
// MASKED: columns outside (m0, m1) are read as 0 (the right edge of an unpacked B).
template <int MR, bool MASKED>
inline void tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, __m256i m0, __m256i m1,
                 __m256 (&c)[kMR][2]) {
  DTORCH_X86_UNROLL
  for (int r = 0; r < MR; ++r) c[r][0] = c[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = MASKED ? _mm256_maskload_ps(B, m0) : _mm256_loadu_ps(B);
    const __m256 b1 = MASKED ? _mm256_maskload_ps(B + 8, m1) : _mm256_loadu_ps(B + 8);
    DTORCH_X86_UNROLL
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      c[r][0] = _mm256_add_ps(c[r][0], _mm256_mul_ps(a, b0));
      c[r][1] = _mm256_add_ps(c[r][1], _mm256_mul_ps(a, b1));
    }
    B += ldb;
  }
}

template <bool MASKED>
inline void tile_rows(int mr, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, __m256i m0,
                      __m256i m1, __m256 (&c)[kMR][2]) {
  switch (mr) {
    case 6: tile<6, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
    case 5: tile<5, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
    case 4: tile<4, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
    case 3: tile<3, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
    case 2: tile<2, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
    default: tile<1, MASKED>(K, A, lda, B, ldb, m0, m1, c); break;
  }
}
static_assert(kMR == 6, "tile_rows dispatches MR = 1..6");

// Writes rows [0, mr) x columns [0, nr) of a tile to C (row i0 + r, column j0) with the epilogue.
inline void store(const __m256 (&c)[kMR][2], int mr, int nr, int64_t i0, int64_t j0, float* C, int64_t ldc,
                  const Epilogue& ep, __m256i m0, __m256i m1) {
  const bool col_bias = ep.bias != nullptr && !ep.bias_per_row;
  for (int r = 0; r < mr; ++r) {
    __m256 v0 = c[r][0], v1 = c[r][1];
    if (col_bias) {  // portable: acc + bias[j]
      v0 = _mm256_add_ps(v0, _mm256_maskload_ps(ep.bias + j0, m0));
      v1 = _mm256_add_ps(v1, _mm256_maskload_ps(ep.bias + j0 + 8, m1));
    }
    const float rb = (ep.bias != nullptr && ep.bias_per_row) ? ep.bias[i0 + r] : 0.0f;
    if (rb != 0.0f) {  // portable adds a row bias only when it is nonzero (keeps the sign of a zero sum)
      const __m256 b = _mm256_set1_ps(rb);
      v0 = _mm256_add_ps(v0, b);
      v1 = _mm256_add_ps(v1, b);
    }
    if (ep.act.kind == ActKind::kRelu) {  // relu_f: x < 0 ? 0 : x (max(0, x) returns x for NaN and -0)
      const __m256 z = _mm256_setzero_ps();
      v0 = _mm256_max_ps(z, v0);
      v1 = _mm256_max_ps(z, v1);
    }
    float* p = C + (i0 + r) * ldc + j0;
    if (nr == kNR) {
      _mm256_storeu_ps(p, v0);
      _mm256_storeu_ps(p + 8, v1);
    } else {
      _mm256_maskstore_ps(p, m0, v0);
      _mm256_maskstore_ps(p + 8, m1, v1);
    }
    if (ep.act.kind != ActKind::kNone && ep.act.kind != ActKind::kRelu) bias_activation(ep.act, 0.0f, p, nr);
  }
}

// Rows [i0, i1) x columns [j0, j1) of C = A . B (+ epilogue); A row-major (lda), B packed or row-major (ldb).
// Column tiles outer: one B panel (K x 16) stays in cache while the unit's row tiles go over it.
inline void nn_block(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, bool packed, float* C,
                     int64_t ldc, const Epilogue& ep, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  __m256 c[kMR][2];
  for (int64_t j = j0; j < j1; j += kNR) {
    const int nr = static_cast<int>(j1 - j < kNR ? j1 - j : kNR);
    const __m256i m0 = lane_mask(nr), m1 = lane_mask(nr - 8);
    const float* b = packed ? B + (j / kNR) * K * kNR : B + j;
    const int64_t bs = packed ? kNR : ldb;
    for (int64_t i = i0; i < i1; i += kMR) {
      const int mr = static_cast<int>(i1 - i < kMR ? i1 - i : kMR);
      if (packed || nr == kNR)
        tile_rows<false>(mr, K, A + i * lda, lda, b, bs, m0, m1, c);
      else
        tile_rows<true>(mr, K, A + i * lda, lda, b, bs, m0, m1, c);
      store(c, mr, nr, i, j, C, ldc, ep, m0, m1);
    }
  }
}

// Independent work units of an M x N gemm_nn (row blocks x column blocks).
inline int64_t gemm_units(int64_t M, int64_t N) { return ceil_div(M, kMB) * ceil_div(N, kNB); }

// Work unit u (column-block major: consecutive units share B).
inline void gemm_nn_unit(int64_t u, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                         int64_t ldb, bool packed, float* C, int64_t ldc, const Epilogue& ep) {
  const int64_t row_blocks = ceil_div(M, kMB);
  const int64_t i0 = (u % row_blocks) * kMB, j0 = (u / row_blocks) * kNB;
  const int64_t i1 = i0 + kMB < M ? i0 + kMB : M, j1 = j0 + kNB < N ? j0 + kNB : N;
  nn_block(K, A, lda, B, ldb, packed, C, ldc, ep, i0, i1, j0, j1);
}

// C (M x N, ldc) = A (M x K, lda) . B (+ epilogue); B row-major (ldb) or packed (packed_b_floats layout).
inline void gemm_nn(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                    int64_t ldb, bool packed, float* C, int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  parallel_chunks(pool, gemm_units(M, N), 1, [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) gemm_nn_unit(u, M, N, K, A, lda, B, ldb, packed, C, ldc, ep);
  });
}

// --- gemm_nt (linear) ------------------------------------------------------------------------------------

inline float combine_lanes(__m256 v) {
  alignas(32) float s[8];
  _mm256_store_ps(s, v);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// out[r] = dot(x, w + r * ldw) for r < R, in portable's 8-lane order.
template <int R>
inline void nt_dots(int64_t K, const float* x, const float* w, int64_t ldw, float* out) {
  __m256 s[R];
  DTORCH_X86_UNROLL
  for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_ps();
  const int64_t K8 = K - K % 8;
  for (int64_t k = 0; k < K8; k += 8) {
    const __m256 xv = _mm256_loadu_ps(x + k);
    DTORCH_X86_UNROLL
    for (int r = 0; r < R; ++r) s[r] = _mm256_add_ps(s[r], _mm256_mul_ps(xv, _mm256_loadu_ps(w + r * ldw + k)));
  }
  DTORCH_X86_UNROLL
  for (int r = 0; r < R; ++r) {
    float v = combine_lanes(s[r]);
    const float* wr = w + r * ldw;
    for (int64_t k = K8; k < K; ++k) v += x[k] * wr[k];
    out[r] = v;
  }
}

constexpr int64_t kNtMB = 8;   // rows (of A) per work unit
constexpr int64_t kNtNB = 64;  // columns (rows of B) per work unit

// C (M x N) = A (M x K, lda) . B^T, B N x K (ldb), (+ epilogue).
inline void gemm_nt(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  const int64_t row_blocks = ceil_div(M, kNtMB);
  const int64_t units = row_blocks * ceil_div(N, kNtNB);
  parallel_chunks(pool, units, 1, [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t i0 = (u % row_blocks) * kNtMB, j0 = (u / row_blocks) * kNtNB;
      const int64_t i1 = i0 + kNtMB < M ? i0 + kNtMB : M, j1 = j0 + kNtNB < N ? j0 + kNtNB : N;
      for (int64_t i = i0; i < i1; ++i) {
        const float* x = A + i * lda;
        float* c = C + i * ldc;
        int64_t j = j0;
        for (; j + 8 <= j1; j += 8) nt_dots<8>(K, x, B + j * ldb, ldb, c + j);
        for (; j + 4 <= j1; j += 4) nt_dots<4>(K, x, B + j * ldb, ldb, c + j);
        for (; j < j1; ++j) nt_dots<1>(K, x, B + j * ldb, ldb, c + j);
        if (ep.bias != nullptr && !ep.bias_per_row) {
          for (int64_t q = j0; q < j1; ++q) c[q] += ep.bias[q];
        }
        const float rb = (ep.bias != nullptr && ep.bias_per_row) ? ep.bias[i] : 0.0f;
        if (rb != 0.0f || ep.act.kind != ActKind::kNone) bias_activation(ep.act, rb, c + j0, j1 - j0);
      }
    }
  });
}

}  // namespace x86
}  // namespace kernels
}  // namespace dtorch
