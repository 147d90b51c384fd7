// Arm semihosting (the debugger's console, files and exit), which QEMU's machines answer with
// -semihosting-config enable=on: the bare-metal builds' only way out. One inline call, no C library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtorch {
namespace semihosting {

constexpr uint32_t kWrite0 = 0x04;      // write a NUL-terminated string to the console
constexpr uint32_t kGetCmdline = 0x15;  // the command line (QEMU: -append)
constexpr uint32_t kExit = 0x18;        // stop; the reason says how
constexpr uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit: QEMU exits with status 0
constexpr uint32_t kRunTimeError = 0x20023;     // ADP_Stopped_RunTimeErrorUnknown: QEMU exits with status 1

inline uint32_t call(uint32_t op, const void* arg) {
#if defined(__ARM_ARCH) && (defined(__thumb__) || defined(__thumb2__))
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
#else
  (void)op;
  (void)arg;
  return 0;
#endif
}

inline void write(const char* s) { call(kWrite0, s); }

// The command line into buf (NUL-terminated); false when the host gives none.
inline bool cmdline(char* buf, size_t cap) {
  struct {
    char* buf;
    uint32_t len;
  } block{buf, static_cast<uint32_t>(cap)};
  return call(kGetCmdline, &block) == 0;
}

[[noreturn]] inline void exit(bool ok) {
  for (;;) call(kExit, reinterpret_cast<const void*>(static_cast<uintptr_t>(ok ? kApplicationExit : kRunTimeError)));
}

}  // namespace semihosting
}  // namespace dtorch
