// The x86-64 kernel set: registration only on CPUs with AVX2 and FMA.
//
// The files of kernels/x86/ are compiled only for x86-64 targets, with -mavx2 -mfma on top of the runtime's
// flags (still -ffp-contract=off: the compiler never fuses a multiply and an add on its own). Everything else
// in the binary keeps the baseline ISA, so the same binary runs on any x86-64 CPU: each x86 kernel registers
// itself (at the rank of its kernel_set.json, DTORCH_KERNEL_RANK, above portable) only when the CPU supports AVX2 and FMA, from a
// function compiled for the baseline x86-64 ISA (SSE2: nothing newer runs before the check).
//
// Inline functions from the shared headers (kernels/common/) are also emitted by these AVX2 translation units; they
// live in the inline namespace DTORCH_ISA (isa_x86 here, kernels/common/isa.h), so the linker can never pick this
// set's copy for baseline code. tests/runtime/test_isa_isolation.py checks that the set's objects define no other
// weak symbols.
#pragma once

#if !defined(__x86_64__) || !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/x86 is built only for x86-64, with -mavx2 -mfma (see setup.py and SConstruct)"
#endif

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/x86: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Whether this CPU runs the x86 kernel set. Compiled for the baseline ISA (no-sse3 also turns off everything
// -mavx2 -mfma imply: SSSE3, SSE4.x, AVX, AVX2, FMA), as is the registration function (kernels/common/isa.h).
__attribute__((target("no-sse3"), noinline)) inline bool x86_avx2_fma_supported() {
  __builtin_cpu_init();  // may run before libgcc's own constructor (static initialization order)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

#include <immintrin.h>

namespace dtorch {
namespace kernels {
namespace x86 {

inline __m256i lane_mask(int n) {  // lanes [0, n) set (n may be <= 0 or >= 8)
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace x86
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_X86_KERNEL: as DTORCH_REGISTER_KERNEL, in the "x86" set, and only on AVX2+FMA CPUs.
// One per file (the registration function has a fixed name inside the file).
#define DTORCH_REGISTER_X86_KERNEL(op, dtype, infer, run)                                                     \
  DTORCH_REGISTER_ISA_KERNEL("x86", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::x86_avx2_fma_supported, op, \
                             dtype, infer, run, nullptr)
// The same with the kernel's prepare function (core/kernel.h PrepareFn: e.g. weights packed once at load).
#define DTORCH_REGISTER_X86_PREPARED_KERNEL(op, dtype, infer, run, prepare)                                      \
  DTORCH_REGISTER_ISA_KERNEL("x86", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::x86_avx2_fma_supported, op, \
                             dtype, infer, run, prepare)
// The same with the kernel's LayoutFn (core/kernel.h).
#define DTORCH_REGISTER_X86_LAYOUT_KERNEL(op, dtype, infer, run, layouts)                                      \
  DTORCH_REGISTER_ISA_LAYOUT_KERNEL("x86", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::x86_avx2_fma_supported, \
                                     op, dtype, infer, run, nullptr, layouts)
