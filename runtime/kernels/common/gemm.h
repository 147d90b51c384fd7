// The portable GEMMs behind conv2d, conv_transpose2d, matmul and linear. Header-only; nothing here
// allocates: operands, outputs and any packed panel belong to the caller (a packed B lives in the kernel's
// planned scratch, sized with packed_b_floats).
//
// Accumulation order (the numerics contract of the portable kernel set):
//   * Accumulation is in float32 (no double), with -ffp-contract=off so no FMA is ever formed.
//   * gemm_nn (C = A.B, B row-major K x N, or packed in kNR-column panels): every C[i][j] starts at +0.0f and
//     adds A[i][k] * B[k][j] for k = 0, 1, ..., K-1 in that order, in one accumulator. The register tile
//     (kMR x kNR outputs) holds kMR * kNR such independent accumulators; the compiler vectorizes across j
//     (different outputs), never inside a sum. Tile shape, work-unit shape and packing only decide which
//     outputs are computed together, not how any one of them is summed.
//   * gemm_nt (C = A.B^T, both operands row-major with K contiguous; linear's weight layout, no copy):
//     every C[i][j] keeps 8 partial sums, lane l adding the products of k = l, l + 8, l + 16, ... in order,
//     for k < 8 * floor(K / 8); the lanes combine as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)),
//     then the remaining k (K mod 8 of them) are added in increasing order. The same for every batch size.
//   * The epilogue then adds the bias (per row or per column) and applies the fused activation.
// Work is split between threads only over independent output tiles, never inside a sum, so the bits of
// the result do not depend on the thread count, the tile an output falls in, the CPU or the SIMD width.
//
// Speed without ISA code: the inner loops have compile-time trip counts and are fully unrolled, so the
// accumulators are plain scalars the compiler keeps in registers and the SLP vectorizer packs across
// outputs (GCC -O2 does not vectorize loops whose trip count it does not know).
#pragma once

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/util.h"

#if defined(__clang__)
#define DTORCH_GEMM_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define DTORCH_GEMM_UNROLL _Pragma("GCC unroll 32")
#else
#define DTORCH_GEMM_UNROLL
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct Epilogue {
  const float* bias = nullptr;  // null: no bias
  bool bias_per_row = true;     // true: bias[i] for row i (conv); false: bias[j] for column j (linear)
  Activation act;
};

namespace gemm_detail {

// 4 x 8 accumulators = 8 registers of 4 floats: fits the 16 vector registers of SSE2 / 32 of NEON with
// room for the B row and the broadcast A values.
constexpr int kMR = 4;    // rows of a register tile
constexpr int kNR = 8;    // columns of a register tile (= the width of a packed B panel)
constexpr int kMB = 32;   // rows of a work unit
constexpr int kNB = 64;   // columns of a work unit (a multiple of kNR)

// Writes an mr x nr accumulator tile (row stride kNR) to C with the epilogue.
inline void store_tile(const float* acc, int mr, int nr, int64_t i0, int64_t j0, float* C, int64_t ldc,
                       const Epilogue& ep) {
  for (int r = 0; r < mr; ++r) {
    float* c = C + (i0 + r) * ldc + j0;
    const float* a = acc + r * kNR;
    if (ep.bias != nullptr && !ep.bias_per_row) {
      for (int j = 0; j < nr; ++j) c[j] = a[j] + ep.bias[j0 + j];
    } else {
      for (int j = 0; j < nr; ++j) c[j] = a[j];
    }
    const float rb = (ep.bias != nullptr && ep.bias_per_row) ? ep.bias[i0 + r] : 0.0f;
    if (rb != 0.0f || ep.act.kind != ActKind::kNone) bias_activation(ep.act, rb, c, nr);
  }
}

// R x kNR register tile (R <= kMR): acc[r][j] = sum over k ascending of A[r][k] * B[k][j], where
// A[r][k] = A[r * a_rs + k * a_cs] and B[k][j] = B[k * ldb + j] (ldb = kNR for a packed panel).
template <int R>
inline void nn_tile(int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B, int64_t ldb,
                    float* acc) {
  float c[R][kNR];
  DTORCH_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_GEMM_UNROLL
    for (int j = 0; j < kNR; ++j) c[r][j] = 0.0f;
  }
  for (int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    float bv[kNR];
    DTORCH_GEMM_UNROLL
    for (int j = 0; j < kNR; ++j) bv[j] = b[j];
    DTORCH_GEMM_UNROLL
    for (int r = 0; r < R; ++r) {
      const float a = A[r * a_rs + k * a_cs];
      DTORCH_GEMM_UNROLL
      for (int j = 0; j < kNR; ++j) c[r][j] += a * bv[j];
    }
  }
  DTORCH_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    DTORCH_GEMM_UNROLL
    for (int j = 0; j < kNR; ++j) acc[r * kNR + j] = c[r][j];
  }
}

// Any mr <= kMR, nr <= kNR tile of an unpacked B (the right edge); the same per-element order.
inline void nn_tile_any(int mr, int nr, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                        int64_t ldb, float* acc) {
  for (int r = 0; r < mr; ++r) {
    float* c = acc + r * kNR;
    for (int j = 0; j < nr; ++j) c[j] = 0.0f;
    const float* ar = A + r * a_rs;
    for (int64_t k = 0; k < K; ++k) {
      const float a = ar[k * a_cs];
      const float* b = B + k * ldb;
      for (int j = 0; j < nr; ++j) c[j] += a * b[j];
    }
  }
}

inline void nn_tile_rows(int mr, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                         int64_t ldb, float* acc) {
  switch (mr) {
    case 4: nn_tile<4>(K, A, a_rs, a_cs, B, ldb, acc); break;
    case 3: nn_tile<3>(K, A, a_rs, a_cs, B, ldb, acc); break;
    case 2: nn_tile<2>(K, A, a_rs, a_cs, B, ldb, acc); break;
    default: nn_tile<1>(K, A, a_rs, a_cs, B, ldb, acc); break;
  }
}

static_assert(kMR == 4, "nn_tile_rows dispatches R = 1..4");
static_assert(kNB % kNR == 0, "a work unit holds whole panels");

// The B operand: row-major (B[k][j] = p[k * ldb + j]) or packed (panel t = columns [t*kNR, t*kNR + kNR)
// stored k-major at p + t * K * kNR, B[k][j] = panel[k * kNR + j % kNR], padded to kNR columns).
struct BOperand {
  const float* p;
  int64_t ldb;  // row stride when unpacked
  bool packed;
};

}  // namespace gemm_detail

// Floats of a packed K x N B operand: ceil(N / kNR) panels of K x kNR.
inline int64_t packed_b_floats(int64_t K, int64_t N) {
  return ceil_div(N, gemm_detail::kNR) * gemm_detail::kNR * K;
}

// Where column j of row k of a packed K x N operand lives (for producers such as im2col).
inline int64_t packed_b_index(int64_t K, int64_t k, int64_t j) {
  using gemm_detail::kNR;
  return (j / kNR) * K * kNR + k * kNR + j % kNR;
}

namespace gemm_detail {

// C[i0:i1, j0:j1] of C = A.B (+ epilogue). A[i][k] = A[i * a_rs + k * a_cs] (any layout, e.g. transposed),
// C[i][j] = C[i * ldc + j]. Row tiles outer, column tiles inner: the kMR rows of A stay in L1 while the
// unit's kNB columns of B stream from L2.
inline void nn_block(int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const BOperand& B, float* C,
                     int64_t ldc, const Epilogue& ep, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  float acc[kMR * kNR];
  for (int64_t i = i0; i < i1; i += kMR) {
    const int mr = static_cast<int>(i1 - i < kMR ? i1 - i : kMR);
    const float* a = A + i * a_rs;
    for (int64_t j = j0; j < j1; j += kNR) {
      const int nr = static_cast<int>(j1 - j < kNR ? j1 - j : kNR);
      if (B.packed) {  // a packed panel is padded to kNR columns
        nn_tile_rows(mr, K, a, a_rs, a_cs, B.p + (j / kNR) * K * kNR, kNR, acc);
      } else if (nr == kNR) {
        nn_tile_rows(mr, K, a, a_rs, a_cs, B.p + j, B.ldb, acc);
      } else {
        nn_tile_any(mr, nr, K, a, a_rs, a_cs, B.p + j, B.ldb, acc);
      }
      store_tile(acc, mr, nr, i, j, C, ldc, ep);
    }
  }
}

// Work unit u of an M x N gemm (units are column-block major, so consecutive units share B).
inline void nn_unit(int64_t u, int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                    const BOperand& B, float* C, int64_t ldc, const Epilogue& ep) {
  const int64_t row_blocks = ceil_div(M, kMB);
  const int64_t ib = u % row_blocks, jb = u / row_blocks;
  const int64_t i0 = ib * kMB, j0 = jb * kNB;
  const int64_t i1 = i0 + kMB < M ? i0 + kMB : M, j1 = j0 + kNB < N ? j0 + kNB : N;
  nn_block(K, A, a_rs, a_cs, B, C, ldc, ep, i0, i1, j0, j1);
}

}  // namespace gemm_detail

// Number of independent work units of an M x N gemm (row blocks x column blocks).
inline int64_t gemm_units(int64_t M, int64_t N) {
  return ceil_div(M, gemm_detail::kMB) * ceil_div(N, gemm_detail::kNB);
}

// Computes work unit u of an M x N gemm_nn; B[k][j] = B[k * ldb + j].
inline void gemm_nn_unit(int64_t u, int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                         const float* B, int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
  gemm_detail::nn_unit(u, M, N, K, A, a_rs, a_cs, gemm_detail::BOperand{B, ldb, false}, C, ldc, ep);
}

// C (M x N) = A.B (+ epilogue), B row-major; split over the pool by output tiles.
inline void gemm_nn(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                    const float* B, int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  const gemm_detail::BOperand b{B, ldb, false};
  parallel_chunks(pool, gemm_units(M, N), 1, [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) gemm_detail::nn_unit(u, M, N, K, A, a_rs, a_cs, b, C, ldc, ep);
  });
}

// The same product with B packed (packed_b_index; packed_b_floats(K, N) floats, pad columns finite, e.g. 0).
// Bit-identical to gemm_nn on the unpacked B; faster, since each panel is read contiguously.
inline void gemm_nn_packed(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs,
                           int64_t a_cs, const float* Bp, float* C, int64_t ldc, const Epilogue& ep) {
  if (M <= 0 || N <= 0) return;
  const gemm_detail::BOperand b{Bp, gemm_detail::kNR, true};
  parallel_chunks(pool, gemm_units(M, N), 1, [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) gemm_detail::nn_unit(u, M, N, K, A, a_rs, a_cs, b, C, ldc, ep);
  });
}

namespace gemm_detail {

inline float combine_lanes(const float* s) { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); }

// out[r] = dot(x, w + r * ldw) for r < 4, in the 8-lane order documented above.
inline void nt_dot4(int64_t K, const float* x, const float* w, int64_t ldw, float* out) {
  float s0[8] = {}, s1[8] = {}, s2[8] = {}, s3[8] = {};
  const float* w0 = w;
  const float* w1 = w + ldw;
  const float* w2 = w + 2 * ldw;
  const float* w3 = w + 3 * ldw;
  const int64_t K8 = K - K % 8;
  for (int64_t k = 0; k < K8; k += 8) {
    for (int l = 0; l < 8; ++l) {
      const float xv = x[k + l];
      s0[l] += xv * w0[k + l];
      s1[l] += xv * w1[k + l];
      s2[l] += xv * w2[k + l];
      s3[l] += xv * w3[k + l];
    }
  }
  float r0 = combine_lanes(s0), r1 = combine_lanes(s1), r2 = combine_lanes(s2), r3 = combine_lanes(s3);
  for (int64_t k = K8; k < K; ++k) {
    r0 += x[k] * w0[k];
    r1 += x[k] * w1[k];
    r2 += x[k] * w2[k];
    r3 += x[k] * w3[k];
  }
  out[0] = r0;
  out[1] = r1;
  out[2] = r2;
  out[3] = r3;
}

inline float nt_dot1(int64_t K, const float* x, const float* w) {
  float s[8] = {};
  const int64_t K8 = K - K % 8;
  for (int64_t k = 0; k < K8; k += 8)
    for (int l = 0; l < 8; ++l) s[l] += x[k + l] * w[k + l];
  float r = combine_lanes(s);
  for (int64_t k = K8; k < K; ++k) r += x[k] * w[k];
  return r;
}

constexpr int kNtMB = 8;   // rows (of A) per work unit
constexpr int kNtNB = 64;  // columns (rows of B) per work unit

}  // namespace gemm_detail

// C (M x N) = A (M x K, lda) . B^T where B is N x K (ldb), (+ epilogue; bias per column typically).
inline void gemm_nt(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float* C, int64_t ldc, const Epilogue& ep) {
  using namespace gemm_detail;
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
        for (; j + 4 <= j1; j += 4) nt_dot4(K, x, B + j * ldb, ldb, c + j);
        for (; j < j1; ++j) c[j] = nt_dot1(K, x, B + j * ldb);
        if (ep.bias != nullptr && !ep.bias_per_row) {
          for (int64_t q = j0; q < j1; ++q) c[q] += ep.bias[q];
        }
        const float rb = (ep.bias != nullptr && ep.bias_per_row) ? ep.bias[i] : 0.0f;
        if (rb != 0.0f || ep.act.kind != ActKind::kNone) bias_activation(ep.act, rb, c + j0, j1 - j0);
      }
    }
  });
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
