// Board builds only (dtorch/edge/build_plan.py): the C++ exception entry points, as calls that stop the process.
//
// The runtime is compiled with -fno-exceptions and never throws, but the static libc++ it links was built with
// exceptions: its std::string members, for one, throw length_error on an absurd size. Those throw sites, and the
// personality routine named by the unwind tables of libc++'s objects, were the only reason the C++ unwinder, the
// exception runtime and the type-info machinery (~40 KB of a ~270 KB static aarch64 dtorch-run) were linked into
// every board binary. Defined here, the archive members stay out. A throw inside libc++ (a bug or memory
// exhaustion, never an input error: those are Status values) prints what it was and aborts, which is also what an
// uncaught exception does.
#include <cerrno>  // program_invocation_short_name: dtorch-run or dtorch-agent
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "dtorch/format.h"

namespace {
[[noreturn]] void fatal(const char* what) {
  dtorch::print_to(stderr, "%s: fatal: %s (this build has no C++ exceptions)\n", program_invocation_short_name, what);
  std::abort();
}
}  // namespace

extern "C" {

void* __cxa_allocate_exception(std::size_t size) noexcept {
  void* p = std::malloc(size);
  if (p == nullptr) fatal("out of memory while raising a C++ exception");
  return p;
}

void __cxa_free_exception(void* p) noexcept { std::free(p); }

// Every exception libc++ throws derives from std::exception.
[[noreturn]] void __cxa_throw(void* obj, void* /*type_info*/, void (*/*destructor*/)(void*)) {
  fatal(static_cast<const std::exception*>(obj)->what());
}

// Called through a vtable slot with no definition; only a bug reaches these. (libc++abi's own versions print with
// the C library's printf, which the runtime otherwise leaves out.)
void __cxa_pure_virtual() { fatal("a pure virtual function was called"); }
void __cxa_deleted_virtual() { fatal("a deleted virtual function was called"); }

[[noreturn]] void __cxa_rethrow() { fatal("a C++ exception was rethrown"); }

void* __cxa_begin_catch(void* /*exception*/) noexcept { fatal("a C++ exception was caught"); }

void __cxa_end_catch() { fatal("a C++ exception was caught"); }

[[noreturn]] void _Unwind_Resume(void* /*exception*/) { fatal("a C++ exception unwound a frame"); }

int __gxx_personality_v0(int /*version*/, int /*actions*/, std::uint64_t /*exception_class*/, void* /*exception*/,
                         void* /*context*/) {
  fatal("a C++ exception reached a frame");
}

#if defined(__arm__)
// ARM EHABI: the unwind index (.ARM.exidx) of libc++'s objects names these personality routines, and its cleanups
// end in __cxa_end_cleanup.
void __cxa_end_cleanup() { fatal("a C++ exception unwound a frame"); }
int __aeabi_unwind_cpp_pr0(int /*state*/, void* /*exception*/, void* /*context*/) {
  fatal("a C++ exception reached a frame");
}
int __aeabi_unwind_cpp_pr1(int /*state*/, void* /*exception*/, void* /*context*/) {
  fatal("a C++ exception reached a frame");
}
int __aeabi_unwind_cpp_pr2(int /*state*/, void* /*exception*/, void* /*context*/) {
  fatal("a C++ exception reached a frame");
}
#endif

}  // extern "C"

#if defined(_LIBCPP_VERSION)
// libc++'s hook for its hardening assertions and other fatal errors (documented as replaceable), without printf.
void std::__libcpp_verbose_abort(const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  char what[256];
  dtorch::vformat(what, sizeof(what), fmt, ap);
  va_end(ap);
  fatal(what);
}
#endif

// libc++'s noexcept functions end their unwind tables in std::terminate; with the personality above it is never
// reached, but the reference would link libc++abi's terminate handlers (and, through them, all of the above).
namespace std {
[[noreturn]] void terminate() noexcept { fatal("std::terminate was called"); }
}  // namespace std
