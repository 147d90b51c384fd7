// The x86-64 AVX2 + FMA kernel set ("avx2"): fused multiply-add kernels for the operators where the arithmetic
// dominates (conv2d incl. depthwise and grouped), registered only on CPUs with AVX2 and FMA. It is what the "fast"
// policy runs on AVX2 CPUs without AVX-512 (where kernels/avx512 ranks above it).
//
// Numerics: these kernels use FMA and their own accumulation order, so their bits differ from the portable
// kernels' (DESIGN.md "Numerics": SIMD kernel sets may differ from portable within a documented tolerance). The
// documented tolerance, pinned by tests/runtime/kernels/test_avx2_kernels.py against float64: every output within
// 1e-5 x the output scale, as the portable kernels. What they keep: each output is computed by a fixed sequence of
// operations that depends only on the shapes (never on the thread count or on how work is split), so threads=1
// and threads=N give identical bits, run to run. The "exact" policy never takes this set (kernels/x86 is the
// bit-exact AVX2 set).
//
// Build: the files of kernels/avx2/ are compiled only for x86-64, with kernel_set.json's -mavx2 -mfma (still
// -ffp-contract=off: the FMAs here are explicit) and DTORCH_KERNEL_ISA=isa_avx2 (kernels/common/isa.h).
// Registration runs from baseline-ISA code.
#pragma once

#if !defined(__x86_64__) || !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/avx2 is built only for x86-64, with -mavx2 -mfma"
#endif

#include <immintrin.h>

#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/isa.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/avx2: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Whether this CPU runs the avx2 kernel set. Baseline ISA (no-sse3 turns off everything -mavx2 -mfma imply).
__attribute__((target("no-sse3"), noinline)) inline bool avx2_fma_supported() {
  __builtin_cpu_init();  // may run before libgcc's own constructor (static initialization order)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

namespace dtorch {
namespace kernels {
namespace avx2 {

// Even floats of s[0 .. 16): [s0 s2 s4 s6 s8 s10 s12 s14].
inline __m256 even_floats(__m256 lo, __m256 hi) {
  const __m256 sh = _mm256_shuffle_ps(lo, hi, 0x88);  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sh), 0xD8));
}

// Masked loads and stores (vmaskmovps) are slow on AMD's Zen 2 (measured: a 3x3 depthwise convolution whose
// loads were all masked ran 2.8x slower than with plain loads), so the set uses them only where a plain access
// would leave the buffer: load_lanes reads with a plain load and clears the lanes outside `m` when all 8 floats lie
// in [lo, hi) (the buffer the valid lanes belong to), store_lanes writes a partial vector with scalar stores. Both
// give exactly the lanes a masked access gives (+0.0f in the cleared ones).
inline __m256 load_lanes(const float* p, __m256i m, const float* lo, const float* hi) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a >= reinterpret_cast<uintptr_t>(lo) && a + 8 * sizeof(float) <= reinterpret_cast<uintptr_t>(hi))
    return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(m));
  return _mm256_maskload_ps(p, m);
}

// Lanes [0, n) of v to p (n <= 8).
inline void store_lanes(float* p, __m256 v, int n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}

// Odd floats of s[0 .. 16): [s1 s3 ... s15].
inline __m256 odd_floats(__m256 lo, __m256 hi) {
  const __m256 sh = _mm256_shuffle_ps(lo, hi, 0xDD);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sh), 0xD8));
}

}  // namespace avx2
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_AVX2_KERNEL: as DTORCH_REGISTER_KERNEL, in the "avx2" set (not bit-exact), and only on CPUs with
// AVX2 and FMA. One per file. The optional last argument is the kernel's prepare function (core/kernel.h).
#define DTORCH_REGISTER_AVX2_KERNEL(op, dtype, infer, run, prepare)                                           \
  DTORCH_REGISTER_ISA_KERNEL("avx2", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::avx2_fma_supported, op, \
                             dtype, infer, run, prepare)
// The same with the kernel's LayoutFn (core/kernel.h).
#define DTORCH_REGISTER_AVX2_LAYOUT_KERNEL(op, dtype, infer, run, prepare, layouts)                               \
  DTORCH_REGISTER_ISA_LAYOUT_KERNEL("avx2", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::avx2_fma_supported, \
                                     op, dtype, infer, run, prepare, layouts)
