// The AArch64 Advanced SIMD kernel set ("neon64"): fused multiply-add kernels for the operators where the
// arithmetic dominates (conv2d incl. depthwise and grouped). Built into every aarch64 board build whose board file
// lists "neon" in its `isa` (kernel_set.json `requires`; chosen at build time, no run-time check: Advanced SIMD is
// part of every AArch64 CPU the boards carry) and into the runtime of an aarch64 host. It is what the "fast" policy
// runs there.
//
// Numerics: as the x86 FMA sets (kernels/avx2/avx2.h): FMA and their own accumulation order, so the bits differ
// from the portable kernels' within the documented tolerance, 1e-5 x the output scale (checked under QEMU against
// the portable kernels: tests/edge/test_board_kernels.py). Each output is computed by a fixed sequence of
// operations that depends only on the shapes, so threads=1 and threads=N give identical bits. The "exact" policy
// never takes this set: a board asked for exact kernels runs the portable bits, which the host shares.
//
// Build: the files of kernels/neon64/ are compiled only for aarch64, with DTORCH_KERNEL_ISA=isa_neon64
// (kernels/common/isa.h) and -ffp-contract=off (the FMAs here are explicit).
#pragma once

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "kernels/neon64 is built only for aarch64 (Advanced SIMD)"
#endif

#include <arm_neon.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/neon64: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Every AArch64 CPU has Advanced SIMD (the set is chosen at build time by the board's ISA list).
inline bool neon64_supported() { return true; }

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_NEON64_KERNEL: as DTORCH_REGISTER_KERNEL, in the "neon64" set (not bit-exact). One per file. The
// last argument is the kernel's prepare function (core/kernel.h) or nullptr.
#define DTORCH_REGISTER_NEON64_KERNEL(op, dtype, infer, run, prepare)                                              \
  DTORCH_REGISTER_ISA_KERNEL("neon64", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::neon64_supported, op, \
                             dtype, infer, run, prepare)
