// The RVV GEMM of the rvv kernel set. Header-only, included by kernels/rvv/*.cc only.
//
// C (M x N) = A (M x K) . B (K x N) (+ epilogue), A packed once in panels of kMR rows (the weights, at load), B read
// in place (a 1x1 convolution's input plane) or filled block by block into a buffer on the stack (kKC rows x kNR
// columns, 16 KiB): kernels/common/fma_gemm.h's block loop.
//
// Register tile: kMR = 4 rows x kNR = 16 columns, one LMUL = 4 vector per row (4 x 4 of the 32 vector registers)
// and one of B per k; each vfmacc.vf takes its A value from a scalar register. A panel's last columns run with a
// shorter vector length, not a separate tile.
//
// Numerics (kernels/rvv/rvv.h): each C[i][j] starts at its bias (or +0.0f) and adds A[i][k] * B[k][j] with one
// fused multiply-add per k, k ascending in one float32 accumulator (spilled to C and reloaded between K blocks,
// which is exact); then the fused activation. The sequence depends only on the shapes, so threads change nothing.
#pragma once

#include <riscv_vector.h>

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"
#include "kernels/rvv/rvv.h"

#define DTORCH_RVV_INLINE inline __attribute__((always_inline))

namespace dtorch {
namespace kernels {
namespace rvv {

constexpr int kMR = 4;        // rows of a register tile (= rows of a packed A panel)
constexpr int kNR = 16;       // columns of a register tile = columns of a B block (e32m4 at VLEN >= 128)
constexpr int64_t kKC = 256;  // rows of a B block: kKC x kNR floats = 16 KiB

using vf = vfloat32m4_t;

// The fused activation as the clamp [lo, hi] in registers (relu, relu6, hardtanh), by compare and merge so that a
// NaN stays NaN (vfmax / vfmin would return the bound); other activations are applied to the stored values
// (`other`, kernels/common/activation.h).
struct Clamp : ClampBounds {
  explicit Clamp(const Activation& a) : ClampBounds(a) {}
  DTORCH_RVV_INLINE vf operator()(vf x, size_t vl) const {
    if (low) x = __riscv_vfmerge_vfm_f32m4(x, lo, __riscv_vmflt_vf_f32m4_b8(x, lo, vl), vl);   // x < lo ? lo : x
    if (high) x = __riscv_vfmerge_vfm_f32m4(x, hi, __riscv_vmfgt_vf_f32m4_b8(x, hi, vl), vl);  // x > hi ? hi : x
    return x;
  }
};

// Row r's accumulator before a K block: the bias before the first (+0 without), the partial sums in C before a
// later one; rows past mr start at 0.
DTORCH_RVV_INLINE vf tile_row_start(int r, bool first, int mr, int64_t i0, int64_t j0, const float* C, int64_t ldc,
                                    const Epilogue& ep, size_t vl) {
  if (r >= mr) return __riscv_vfmv_v_f_f32m4(0.0f, vl);
  if (!first) return __riscv_vle32_v_f32m4(C + (i0 + r) * ldc + j0, vl);
  if (ep.bias == nullptr) return __riscv_vfmv_v_f_f32m4(0.0f, vl);
  if (ep.bias_per_row) return __riscv_vfmv_v_f_f32m4(ep.bias[i0 + r], vl);
  return __riscv_vle32_v_f32m4(ep.bias + j0, vl);
}

DTORCH_RVV_INLINE void tile_row_finish(int r, vf c, int mr, int nr, int64_t i0, int64_t j0, float* C, int64_t ldc,
                                       const Activation& act, const Clamp& cl, size_t vl) {
  if (r >= mr) return;
  float* p = C + (i0 + r) * ldc + j0;
  __riscv_vse32_v_f32m4(p, cl(c, vl), vl);
  if (cl.other) bias_activation(act, 0.0f, p, nr);
}

// One register tile (mr <= kMR rows x nr <= kNR columns) over one K block: c[r] += ap[k * kMR + r] * B[k][lanes] for
// k < kc (k ascending, one FMA per k) with B[k] at bp + k * ldb; the activation after the last block.
inline void tile_any(int mr, int nr, bool first, bool last, int64_t kc, const float* ap, const float* bp, int64_t ldb,
                     int64_t i0, int64_t j0, float* C, int64_t ldc, const Epilogue& ep) {
  const size_t vl = __riscv_vsetvl_e32m4(static_cast<size_t>(nr));
  vf c0 = tile_row_start(0, first, mr, i0, j0, C, ldc, ep, vl);
  vf c1 = tile_row_start(1, first, mr, i0, j0, C, ldc, ep, vl);
  vf c2 = tile_row_start(2, first, mr, i0, j0, C, ldc, ep, vl);
  vf c3 = tile_row_start(3, first, mr, i0, j0, C, ldc, ep, vl);
  for (int64_t k = 0; k < kc; ++k) {
    const vf b = __riscv_vle32_v_f32m4(bp, vl);
    c0 = __riscv_vfmacc_vf_f32m4(c0, ap[0], b, vl);
    c1 = __riscv_vfmacc_vf_f32m4(c1, ap[1], b, vl);
    c2 = __riscv_vfmacc_vf_f32m4(c2, ap[2], b, vl);
    c3 = __riscv_vfmacc_vf_f32m4(c3, ap[3], b, vl);
    ap += kMR;
    bp += ldb;
  }
  const Activation act = last ? ep.act : Activation{};
  const Clamp cl(act);
  tile_row_finish(0, c0, mr, nr, i0, j0, C, ldc, act, cl, vl);
  tile_row_finish(1, c1, mr, nr, i0, j0, C, ldc, act, cl, vl);
  tile_row_finish(2, c2, mr, nr, i0, j0, C, ldc, act, cl, vl);
  tile_row_finish(3, c3, mr, nr, i0, j0, C, ldc, act, cl, vl);
}
static_assert(kMR == 4, "tile_any keeps 4 row accumulators");

// C (M x N, ldc) = A . B (+ epilogue) with this set's tiles (kernels/common/fma_gemm.h).
using Gemm = BlockedGemm<kMR, kNR, kKC, tile_any>;

}  // namespace rvv
}  // namespace kernels
}  // namespace dtorch
