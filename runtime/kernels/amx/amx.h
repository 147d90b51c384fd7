// The x86-64 AMX kernel set ("amx"): int8 kernels on the AMX tile registers (tdpbsud: a 16 x 16 int32 tile += a 16 x K
// s8 tile times a K x 16 u8 tile, K <= 64), registered only on CPUs with AVX-512 VNNI (the epilogues) and AMX-TILE /
// AMX-INT8. Linux hands a process the tile data state only on request (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16):
// amx_permitted() asks once, at the first run, and a kernel whose request is refused runs the vnni set's kernel.
//
// Numerics: bit-exact with the portable int8 kernels: int32 sums are exact in any order and the requantization is
// the vnni set's (kernels/vnni/vnni.h), so the set is "exact" like vnni.
#pragma once

#if !defined(__x86_64__) || !defined(__AVX512VNNI__) || !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || \
    !(defined(__AMX_INT8__) || defined(__AMXINT8__))  // GCC: __AMX_TILE__; clang: __AMXTILE__
#error "kernels/amx is built only for x86-64, with the vnni flags and -mamx-tile -mamx-int8"
#endif

#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// Whether this CPU has the set's instructions: the vnni set's, and AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24
// and 25; read directly, as not every compiler's __builtin_cpu_supports knows them).
__attribute__((target("no-sse3"), noinline)) inline bool x86_amx_supported() {
  if (!x86_vnni_supported()) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return ((d >> 24) & 1u) != 0 && ((d >> 25) & 1u) != 0;
}

// Whether the OS lets this process use the tile data (asked once; true from then on for every thread).
inline bool amx_permitted() {
  static const bool ok = [] {
    constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: ARCH_REQ_XCOMP_PERM
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

// The tile configuration (palette 1): 64 bytes, loaded by ldtilecfg.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch

// DTORCH_REGISTER_AMX_KERNEL: as DTORCH_REGISTER_KERNEL, in the "amx" set (bit-exact), and only on CPUs that have
// it. One per file. The last argument is the kernel's prepare function (core/kernel.h PrepareFn).
#define DTORCH_REGISTER_AMX_KERNEL(op, dtype, infer, run, prepare)                                               \
  DTORCH_REGISTER_ISA_KERNEL("amx", DTORCH_KERNEL_RANK, true, ::dtorch::kernels::x86_amx_supported, op, dtype, \
                             infer, run, prepare)
