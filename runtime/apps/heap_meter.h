// The heap meter of dtorch-run: heap_meter.cc replaces the global operator new/delete of the dtorch-run process with
// versions that keep the bytes currently allocated and their high-water mark (what `dtorch-run --json` reports as
// the runtime's heap peak). Only the dtorch-run binary links it; the runtime library itself is unchanged.
#pragma once

#include <cstddef>

namespace dtorch {
namespace apps {

size_t heap_bytes_peak();  // the most ever held at once since the process started

}  // namespace apps
}  // namespace dtorch
