// The AArch64 dot-product kernel set ("neon64dot"): int8 kernels built on SDOT (Armv8.2-A's optional, Armv8.4-A's
// mandatory dot-product instructions: each 32-bit lane adds four s8 x s8 products), built into the aarch64 boards
// whose board file lists "dotprod" in its `isa` (Cortex-A55, A76, A78: rk3588's both clusters). Chosen at build
// time: no run-time check.
//
// Numerics: bit-exact with the portable int8 kernels (kernels/common/requant.h): the int32 sums are exact whatever
// their order and the requantization is the same integer arithmetic (SRSHL is the rounding shift with ties up), so
// the set is "exact" (both kernel policies take it); tests/edge/test_board_kernels.py holds it to the portable bits
// under QEMU.
//
// Build: the set's files are compiled only for aarch64 (kernel_set.json), with DTORCH_KERNEL_ISA=isa_neon64dot.
// The dot-product instructions are switched on here, by a pragma, not by a flag: GCC spells it -march=...+dotprod
// and zig (LLVM) as a CPU feature, and a board's -mcpu already names one of them.
#pragma once

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "kernels/neon64dot is built only for aarch64 (Advanced SIMD)"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#define DTORCH_NEON64DOT_END _Pragma("clang attribute pop")  // at the end of the file: the registration's
#else
#pragma GCC target("arch=armv8.2-a+dotprod")
#define DTORCH_NEON64DOT_END
#endif

#include <arm_neon.h>
#include <stdint.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/requant.h"
#include "kernels/common/requant_neon.h"  // Requant, requant_apply ...: the single-rounding requantization

#if defined(__clang__)
#define DTORCH_NEON64DOT_UNROLL _Pragma("unroll")
#else
#define DTORCH_NEON64DOT_UNROLL _Pragma("GCC unroll 16")
#endif

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/neon64dot: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The set is chosen at build time by the board's ISA list.
inline bool neon64dot_supported() { return true; }

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_NEON64DOT_KERNEL: as DTORCH_REGISTER_KERNEL, in the "neon64dot" set (bit-exact), at the set's rank
// (kernel_set.json). One per file, its last line (it ends the dot-product region the header opened). The last
// argument is the kernel's prepare function (core/kernel.h) or nullptr.
#define DTORCH_REGISTER_NEON64DOT_KERNEL(op, dtype, infer, run, prepare)                                          \
  DTORCH_REGISTER_ISA_KERNEL("neon64dot", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::neon64dot_supported, op, \
                             dtype, infer, run, prepare);                                                        \
  DTORCH_NEON64DOT_END static_assert(true, "the registration ends with the caller's semicolon")
