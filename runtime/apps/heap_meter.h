// The heap meter of dtorch-run: heap_meter.cc replaces the global operator new/delete of the dtorch-run process with
// versions that keep the bytes currently allocated and their high-water mark (what `dtorch-run --json` reports as
// the runtime's heap peak). dtorch-run and dtorch-agent link it (in a board build its new, which aborts on
// exhaustion, keeps the C++ library's throwing operator new and the exception runtime it pulls out of the binary);
// the runtime library itself is unchanged.
#pragma once

#include <cstddef>

namespace dtorch {
namespace apps {

size_t heap_bytes_peak();  // the most ever held at once since the process started

}  // namespace apps
}  // namespace dtorch
