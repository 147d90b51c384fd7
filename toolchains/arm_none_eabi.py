"""arm-none-eabi: Debian's bare-metal Arm GCC (``gcc-arm-none-eabi``) with newlib-nano, for Cortex-M firmware.

No operating system, no heap, no exceptions: the firmware links the heapless core (runtime/core), the board's
kernels and runtime/baremetal/ with the start-up code and linker script of emulation/baremetal/ (dtorch/edge/
firmware.py), against newlib-nano's libc (memcpy, strlen) and libm only. The board file gives the core and FPU
(``-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16``).
"""

from __future__ import annotations

from collections.abc import Mapping

from dtorch.edge.toolchains import BuildFlags, Found, Toolchain, apt_install_command, probe_version, which

TRIPLE = "arm-none-eabi"
#: What the firmware needs from Debian: the compiler, newlib (nano) and its C++ headers.
PACKAGES = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "libstdc++-arm-none-eabi-newlib")
#: Code generation every firmware object gets, beside the board's CPU flags: no exceptions, RTTI, thread-safe
#: statics or atexit (nothing here unwinds, looks types up or runs destructors at exit), smaller error messages
#: (dtorch::Status holds its message in place, on a small stack), and GCC 12's false positive on FlatBuffers
#: strings (-Wstringop-overread) off.
FIRMWARE_FLAGS = ("-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-fno-use-cxa-atexit",
                  "-DDTORCH_STATUS_MESSAGE_BYTES=160", "-DDTORCH_BARE_METAL=1", "-Wno-stringop-overread")
#: The link: our own start-up code (no crt0), newlib-nano, no unused sections, libm and libc only.
LINK_FLAGS = ("-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections")
LIBS = ("-lm", "-lc", "-lgcc")


class ArmNoneEabi(Toolchain):
    family = "arm-none-eabi"
    description = "Debian's bare-metal Arm GCC with newlib-nano (Cortex-M firmware)"

    @property
    def arches(self) -> tuple[str, ...]:
        return ("armv7e-m", "armv8.1-m")

    def install_command(self, arch: str) -> str:
        self.check_arch(arch)
        return apt_install_command(*PACKAGES)

    def find(self, arch: str, env: Mapping[str, str] | None = None) -> Found:
        self.check_arch(arch)
        cxx = which(f"{TRIPLE}-g++", env)
        if cxx is None:
            return self.missing(arch, f"{TRIPLE}-g++ is not on PATH", target=TRIPLE, kind="gcc")
        version = probe_version([cxx, "--version"])
        if version is None:
            return self.missing(arch, f"{cxx} --version failed", target=TRIPLE, kind="gcc")
        tools: dict[str, tuple[str, ...]] = {}
        for tool in ("gcc", "nm", "size", "objcopy", "readelf"):
            path = which(f"{TRIPLE}-{tool}", env)
            if path:
                tools[tool] = (path,)
        if "gcc" not in tools:
            return self.missing(arch, f"{TRIPLE}-gcc is not on PATH", target=TRIPLE, kind="gcc")
        return Found(family=self.family, arch=arch, found=True, cxx=(cxx,), version=version,
                     install=self.install_command(arch), target=TRIPLE, kind="gcc", lto=False, tools=tools)

    def flags(self, found, board, *, lto=None, strip=True, static=True, profile=None,  # type: ignore[no-untyped-def]
              exceptions=True) -> BuildFlags:
        """The board's CPU flags and profile, the firmware's code generation, and the bare-metal link (a firmware
        ELF keeps its symbols: the size report reads them)."""
        base = super().flags(found, board, lto=False, strip=False, static=False, profile=profile, exceptions=False)
        cxx = tuple(f for f in base.cxxflags if f != "-pthread") + FIRMWARE_FLAGS
        ld = tuple(f for f in base.ldflags if f not in ("-pthread", "-Wl,--gc-sections")) + LINK_FLAGS
        return BuildFlags(cxxflags=cxx, ldflags=ld, libs=LIBS, lto=False, static=True, strip=False)


TOOLCHAIN = ArmNoneEabi()
