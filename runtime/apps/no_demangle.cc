// Board builds only (dtorch/edge/build_plan.py): a __cxa_demangle that declines. The runtime never throws, but the
// C++ libraries' default terminate handler demangles an uncaught exception's type name, and that link alone pulled
// libc++abi's demangler (~110 KB of a ~430 KB static aarch64 dtorch-run) into every board binary. Defining the
// symbol here keeps the archive member out; a terminate message then shows the mangled name.
#include <cstddef>

extern "C" char* __cxa_demangle(const char* /*mangled*/, char* /*buf*/, std::size_t* /*n*/, int* status) {
  if (status != nullptr) *status = -2;  // "mangled name is not a valid name under the C++ ABI mangling rules"
  return nullptr;
}
