// What the Arm Advanced SIMD kernel sets (kernels/neon64: AArch64, kernels/neon32: armv7-a NEON + VFPv4) share:
// loop pragmas, the fused-activation clamp and the register tiles' start and finish. Header-only; included only by
// those sets' files (and by kernels/common/neon_*.h), which are compiled only for Arm targets with NEON.
#pragma once

#if !defined(__ARM_NEON) || !defined(__ARM_FEATURE_FMA)
#error "kernels/common/neon.h: for Arm targets with NEON and fused multiply-add (AArch64, or armv7-a with VFPv4)"
#endif

#include <arm_neon.h>

#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

#if defined(__clang__)
#define DTORCH_NEON_UNROLL _Pragma("unroll")
#else
#define DTORCH_NEON_UNROLL _Pragma("GCC unroll 16")
#endif
#define DTORCH_NEON_INLINE inline __attribute__((always_inline))

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace neon {

// x < lo ? lo : x and x > hi ? hi : x with NaN passed through (FMAX/FMIN return NaN when either operand is NaN,
// and a NaN bound never occurs: the bounds are 0, 6 or finite hardtanh limits).
DTORCH_NEON_INLINE float32x4_t clamp_lo(float32x4_t lo, float32x4_t x) { return vmaxq_f32(lo, x); }
DTORCH_NEON_INLINE float32x4_t clamp_hi(float32x4_t hi, float32x4_t x) { return vminq_f32(hi, x); }

// The fused activation as the clamp [lo, hi] every output goes through in registers (ClampBounds in
// kernels/common/activation.h: [-inf, inf] for none and the other activations, which changes nothing, NaN
// included), and whether the activation is another one, applied to the stored values afterwards (`after`).
struct Clamp {
  float32x4_t lo, hi;
  bool after;
  explicit Clamp(const Activation& a) {
    const ClampBounds b(a);
    lo = vdupq_n_f32(b.lo);
    hi = vdupq_n_f32(b.hi);
    after = b.other;
  }
  DTORCH_NEON_INLINE float32x4_t operator()(float32x4_t x) const { return clamp_hi(hi, clamp_lo(lo, x)); }
};

// The accumulators of a register tile (rows [i0, i0 + MR) x columns [j0, j0 + 4 NV), of which mr x nr are C's)
// before a K block: the bias before the first one (+0 without), the partial sums in C before a later one. Rows past
// mr start at 0; `edge` (4 NV floats) holds a partial row.
template <int MR, int NV>
DTORCH_NEON_INLINE void tile_start(bool first, int mr, int nr, int64_t i0, int64_t j0, const float* C, int64_t ldc,
                                   const Epilogue& ep, float32x4_t (&c)[MR][NV], float* edge) {
  constexpr int kCols = 4 * NV;
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
}

// Stores the mr x nr outputs of a register tile after a K block, with the fused activation after the last one.
template <int MR, int NV>
DTORCH_NEON_INLINE void tile_finish(bool last, int mr, int nr, int64_t i0, int64_t j0, float* C, int64_t ldc,
                                    const Epilogue& ep, float32x4_t (&c)[MR][NV], float* edge) {
  constexpr int kCols = 4 * NV;
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
      if (nr == kCols)
        vst1q_f32(p + 4 * v, x);
      else
        vst1q_f32(edge + 4 * v, x);
    }
    if (nr != kCols)
      for (int q = 0; q < nr; ++q) p[q] = edge[q];
    if (cl.after) bias_activation(act, 0.0f, p, nr);
  }
}

}  // namespace neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
