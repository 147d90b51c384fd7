// What the heapless core asks of the platform it runs on, one function per need, defined by the layer that
// links it: hosted/print.cc on Linux hosts and boards, the firmware's start-up code on bare metal.
#pragma once

namespace dtorch {

// A bug that must stop the program (a kernel registered twice or inconsistently at start-up): write the message
// where a developer sees it (stderr, a semihosting console) and stop. Never returns.
[[noreturn]] void platform_fatal(const char* message);

}  // namespace dtorch
