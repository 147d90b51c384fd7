// The RISC-V Vector 1.0 kernel set ("rvv"): vector kernels for the operators where the arithmetic dominates
// (conv2d incl. depthwise and grouped). Built into every riscv64 board build whose board file lists "rvv1.0" in its
// `isa` (kernel_set.json `requires`; chosen at build time, no run-time check) and whose compiler has the RVV
// intrinsics (`compilers`: clang / zig; GCC 12 has none, so a gcc-cross build keeps the portable kernels). The
// board's flags enable the V extension (zig: -mcpu=baseline_rv64+v).
//
// Vectors are LMUL = 4 groups of e32 (16 floats at the V extension's minimum VLEN of 128, more on wider
// machines, which the code does not assume: every vector length comes from vsetvl).
//
// Numerics: within the documented tolerance of the portable kernels, 1e-5 x the output scale (checked under QEMU:
// tests/edge/test_board_kernels.py), as the other SIMD sets: fused multiply-adds (vfmacc) in their own order. The
// clamps compare and merge rather than use vfmax/vfmin, which return the other operand for a NaN: a NaN stays
// NaN, as in the portable kernels. Each output is computed by a fixed sequence of operations that depends only on
// the shapes, so threads=1 and threads=N give identical bits. The "exact" policy never takes this set.
//
// Build: the files of kernels/rvv/ are compiled only for riscv64, with DTORCH_KERNEL_ISA=isa_rvv
// (kernels/common/isa.h) and -ffp-contract=off (the multiply-adds here are explicit).
#pragma once

#if !defined(__riscv) || __riscv_xlen != 64 || !defined(__riscv_vector)
#error "kernels/rvv is built only for riscv64 with the V extension (zig: -mcpu=baseline_rv64+v)"
#endif

#include <riscv_vector.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"

#if !defined(DTORCH_KERNEL_ISA) || !defined(DTORCH_KERNEL_RANK)
#error "kernels/rvv: the build must define DTORCH_KERNEL_ISA and DTORCH_KERNEL_RANK (kernel_set.json flags and rank; see kernels/common/isa.h)"
#endif

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The board's ISA list says the CPU has RVV 1.0 (the set is chosen at build time).
inline bool rvv_supported() { return true; }

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_RVV_KERNEL: as DTORCH_REGISTER_KERNEL, in the "rvv" set (not bit-exact). One per file. The last
// argument is the kernel's prepare function (core/kernel.h) or nullptr.
#define DTORCH_REGISTER_RVV_KERNEL(op, dtype, infer, run, prepare)                                                 \
  DTORCH_REGISTER_ISA_KERNEL("rvv", DTORCH_KERNEL_RANK, false, ::dtorch::kernels::rvv_supported, op, dtype, \
                             infer, run, prepare)
