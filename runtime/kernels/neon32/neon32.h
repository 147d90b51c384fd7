// The armv7-a NEON + VFPv4 kernel set ("neon32"): SIMD kernels for the operators where the arithmetic dominates
// (conv2d incl. depthwise and grouped), for Cortex-A7 class boards. Built into every armv7 board build whose board
// file lists "neon" and "vfpv4" in its `isa` (kernel_set.json `requires`; chosen at build time, no run-time check);
// the board's flags select the FPU (-mfpu=neon-vfpv4, or LLVM's cortex_a7). It is what the "fast" policy runs there.
//
// Numerics: within the documented tolerance of the portable kernels, 1e-5 x the output scale (checked under QEMU:
// tests/edge/test_board_kernels.py), as the other SIMD sets: fused multiply-adds (VFMA) in their own order; armv7
// NEON also flushes subnormal inputs and results to zero, far below the tolerance. Each output is computed
// by a fixed sequence of operations that depends only on the shapes, so threads=1 and threads=N give identical
// bits. The "exact" policy never takes this set.
//
// Build: the files of kernels/neon32/ are compiled only for armv7, with DTORCH_KERNEL_ISA=isa_neon32
// (kernels/common/isa.h) and -ffp-contract=off (the multiply-adds here are explicit).
#pragma once

#if defined(__aarch64__) || !defined(__arm__) || !defined(__ARM_NEON) || !defined(__ARM_FEATURE_FMA)
#error "kernels/neon32 is built only for armv7-a with NEON and VFPv4 (-mfpu=neon-vfpv4)"
#endif

#include <arm_neon.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/neon32: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The board's ISA list says the CPU has NEON and VFPv4 (the set is chosen at build time).
inline bool neon32_supported() { return true; }

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_NEON32_KERNEL: as DTORCH_REGISTER_KERNEL, in the "neon32" set (not bit-exact). One per file. The
// last argument is the kernel's prepare function (core/kernel.h) or nullptr.
#define DTORCH_REGISTER_NEON32_KERNEL(op, dtype, infer, run, prepare)                                              \
  DTORCH_REGISTER_ISA_KERNEL("neon32", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::neon32_supported, op, \
                             dtype, infer, run, prepare)
