// The x86-64 AVX-512 kernel set ("avx512"): FMA kernels for the operators where the arithmetic dominates
// (conv2d incl. depthwise, linear, matmul), registered only on CPUs with AVX-512 F/BW/DQ/VL and FMA.
//
// Numerics: these kernels use fused multiply-add and their own accumulation order, so their bits differ from
// the portable kernels' (DESIGN.md "Numerics": SIMD kernel sets may differ from portable within a documented
// tolerance). The documented tolerance, pinned by tests/runtime/kernels/test_avx512_kernels.py against float64:
// every output within 1e-5 x the output scale, as the portable kernels. What they keep: each output is computed
// by a fixed sequence of operations that depends only on the shapes (never on the thread count or on how work
// is split), so threads=1 and threads=N give identical bits, run to run.
//
// Sessions pick kernels by policy (SessionOptions::kernels, InferenceSession(kernels=...)): "fast" (default)
// takes this set where the CPU has it; "exact" takes only sets bit-identical to portable (portable, x86), the
// policy to use when a host result must match an emulated board bit for bit; "portable" takes only portable.
//
// Build: the files of kernels/avx512/ are compiled only for x86-64, with -mavx512f -mavx512bw -mavx512dq
// -mavx512vl -mfma (and -ffp-contract=off: the compiler never fuses on its own; the FMAs here are explicit).
// Registration runs from baseline-ISA code, as for kernels/x86; shared helpers are kept apart by kernels/common/isa.h.
#pragma once

#if !defined(__x86_64__) || !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) ||        \
    !defined(__AVX512VL__) || !defined(__FMA__)
#error "kernels/avx512 is built only for x86-64, with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma"
#endif

#include <immintrin.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/avx512: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// max/min with maxps/minps semantics (the second operand when either is NaN or both are zero). Written with the
// all-lanes mask form: GCC 12's plain _mm512_max_ps/_mm512_min_ps expand _mm512_undefined_ps, which trips
// -Wmaybe-uninitialized under -Werror.
inline __m512 vmax(__m512 a, __m512 b) { return _mm512_mask_max_ps(b, __mmask16{0xFFFF}, a, b); }
inline __m512 vmin(__m512 a, __m512 b) { return _mm512_mask_min_ps(b, __mmask16{0xFFFF}, a, b); }

// The index vector of _mm512_permutex2var_ps that keeps floats 0, 2, ..., 30 of two vectors (a stride-2 row).
inline __m512i even_lanes() {
  return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}

// Whether this CPU runs the avx512 kernel set (and its OS saves the AVX-512 state: __builtin_cpu_supports
// reports a feature only when XCR0 enables it).
__attribute__((target("no-sse3"), noinline)) inline bool x86_avx512_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_AVX512_KERNEL: as DTORCH_REGISTER_KERNEL, in the "avx512" set (not bit-exact), and only on
// CPUs that have it. One per file.
// The optional last argument is the kernel's prepare function (core/kernel.h PrepareFn).
#define DTORCH_REGISTER_AVX512_KERNEL(op, dtype, infer, run, prepare)                                         \
  DTORCH_REGISTER_ISA_KERNEL("avx512", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::x86_avx512_supported, \
                             op, dtype, infer, run, prepare)
// The same with the kernel's LayoutFn (core/kernel.h).
#define DTORCH_REGISTER_AVX512_LAYOUT_KERNEL(op, dtype, infer, run, prepare, layouts)                            \
  DTORCH_REGISTER_ISA_LAYOUT_KERNEL("avx512", DTORCH_KERNEL_RANK, false,                                 \
                                     ::dtorch::kernels::x86_avx512_supported, op, dtype, infer, run, prepare, layouts)
