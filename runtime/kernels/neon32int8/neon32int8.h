// The armv7-a NEON int8 kernel set ("neon32int8"): int8 kernels for Cortex-A7 class boards, which have NEON but no
// dot-product instructions. Built into every armv7 board build whose board file lists "neon" in its `isa`
// (kernel_set.json `requires`; chosen at build time, no run-time check).
//
// Numerics: bit-exact with the portable int8 kernels (kernels/common/requant.h): the products are VMLAL.S16
// (16 x 16 -> 32-bit multiply-accumulate, wrapping as the portable kernel's int32 sums wrap) on operands widened
// to int16, exact for every int8 value and zero point; integer sums do not depend on their order; the
// requantization is kernels/common/requant_neon.h's single rounding (VQDMULH + VRSHL), shared with the AArch64
// dot-product set. So the set is "exact" (both kernel policies take it), unlike the float set kernels/neon32;
// tests/edge/test_board_int8_kernels.py holds it to the portable bits under QEMU.
//
// Build: the files of kernels/neon32int8/ are compiled only for armv7, with DTORCH_KERNEL_ISA=isa_neon32int8; the
// board's flags select NEON (-mfpu=neon-vfpv4, or LLVM's cortex_a7).
#pragma once

#if defined(__aarch64__) || !defined(__arm__) || !defined(__ARM_NEON)
#error "kernels/neon32int8 is built only for armv7-a with NEON (-mfpu=neon...)"
#endif

#include <arm_neon.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/requant.h"
#include "kernels/common/requant_neon.h"  // Requant, requant_apply ...: the single-rounding requantization

// Full unrolling of the constant loops over a tile's accumulators (they stay in registers), also at -Os.
#if defined(__clang__)
#define DTORCH_NEON32INT8_UNROLL _Pragma("unroll")
#else
#define DTORCH_NEON32INT8_UNROLL _Pragma("GCC unroll 16")
#endif

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/neon32int8: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The board's ISA list says the CPU has NEON (the set is chosen at build time).
inline bool neon32int8_supported() { return true; }

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_NEON32INT8_KERNEL: as DTORCH_REGISTER_KERNEL, in the "neon32int8" set (bit-exact), at the set's
// rank (kernel_set.json). One per file. The last argument is the kernel's prepare function (core/kernel.h) or
// nullptr.
#define DTORCH_REGISTER_NEON32INT8_KERNEL(op, dtype, infer, run, prepare)                                          \
  DTORCH_REGISTER_ISA_KERNEL("neon32int8", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::neon32int8_supported, op, \
                             dtype, infer, run, prepare)
