// DTORCH_ISA: the name of the inline namespace that holds every inline function of kernels/common/, so that a
// kernel file compiled with extra ISA flags (kernels/x86: AVX2 + FMA, kernels/avx512: AVX-512) gets its own copy
// of each helper under its own mangled name.
//
// Why: an inline function is emitted as a weak (COMDAT) symbol in every object file that does not inline it, and
// the linker keeps one copy for the whole binary. Without distinct names, the copy it keeps can be the one from
// an AVX-512 object, and a portable kernel calling it dies with SIGILL on a CPU without AVX-512 (seen:
// kernels::parse_activation on an AVX2-only AMD EPYC). With an ISA-tagged inline namespace the AVX-512 copy is
// kernels::isa_avx512::parse_activation, which only AVX-512 code calls. Callers write kernels::parse_activation
// as before (the namespace is inline).
//
// The build defines DTORCH_KERNEL_ISA for the files of an ISA kernel set (setup.py and SConstruct: ISA flags);
// every other file uses isa_baseline. The ISA sets' own headers refuse to compile without it, and
// tests/runtime/test_isa_isolation.py checks the objects: an ISA object may define no weak symbol outside its
// own namespaces.
#pragma once

#if defined(DTORCH_KERNEL_ISA)
#define DTORCH_ISA DTORCH_KERNEL_ISA
#else
#define DTORCH_ISA isa_baseline
#endif

// DTORCH_BASELINE_TARGET: compiles a function for the architecture's baseline ISA inside a file built with extra
// ISA flags (x86-64: target("no-sse3") turns off everything -mavx2 / -mavx512f imply). Nothing on Arm and RISC-V,
// whose sets are chosen at build time by the board's ISA list (their `supported()` is a constant).
#if defined(__x86_64__) || defined(__i386__)
#define DTORCH_BASELINE_TARGET __attribute__((target("no-sse3")))
#else
#define DTORCH_BASELINE_TARGET
#endif

// DTORCH_REGISTER_ISA_KERNEL(set, rank, bit_exact, supported, op, dtype, infer, run, prepare): what each ISA kernel
// set's own registration macro expands to (kernels/x86/x86.h, kernels/avx2/avx2.h, kernels/avx512/avx512.h,
// kernels/neon64/neon64.h, kernels/neon32/neon32.h, kernels/rvv/rvv.h). It defines the kernel's constant-initialized
// KernelEntry (core/kernel.h), which a function compiled for the baseline ISA (DTORCH_BASELINE_TARGET: nothing
// newer runs before the check) links into the registry only when `supported()` says this CPU runs the set. One per
// file: the names are fixed within the file.
#define DTORCH_REGISTER_ISA_KERNEL(set, rank, bit_exact, supported, op, dtype, infer, run, prepare)                 \
  DTORCH_REGISTER_ISA_LAYOUT_KERNEL(set, rank, bit_exact, supported, op, dtype, infer, run, prepare, nullptr)
// The same with the kernel's LayoutFn (core/kernel.h: which of a node's tensors it takes blocked).
#define DTORCH_REGISTER_ISA_LAYOUT_KERNEL(set, rank, bit_exact, supported, op, dtype, infer, run, prepare, layouts)  \
  static ::dtorch::KernelEntry dtorch_isa_kernel_entry{                                                            \
      ::dtorch::KernelDef{DTORCH_OP_SCHEMA(op).name, dtype, infer, run, ::dtorch::schema_arity(DTORCH_OP_SCHEMA(op)), \
                          set, rank, bit_exact, prepare, &DTORCH_OP_SCHEMA(op), layouts},                            \
      nullptr};                                                                                                    \
  DTORCH_BASELINE_TARGET __attribute__((noinline)) static bool dtorch_isa_register_kernel() {                          \
    return supported() && ::dtorch::register_kernel(&dtorch_isa_kernel_entry);                                    \
  }                                                                                                                \
  static const bool dtorch_isa_kernel_registered = dtorch_isa_register_kernel()
