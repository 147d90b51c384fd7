"""zig: ``zig c++`` from the ``ziglang`` PyPI package: static musl binaries with nothing but pip.

Runs as ``<python> -m ziglang c++ -target aarch64-linux-musl ...`` (arm-linux-musleabihf, riscv64-linux-musl,
hexagon-linux-musl).
The board file supplies the CPU (zig spells LLVM CPU names with underscores: ``-mcpu=cortex_a76``; RISC-V
takes ``-mcpu=baseline_rv64+v``, not ``-march``). LTO is on for aarch64 and riscv64; on armv7 only for builds
without C++ exceptions (NO_LTO), such as the DTorch runtime's.

Zig builds musl, libc++, libc++abi, libunwind and compiler-rt from source the first time it links for a given
target, CPU, optimisation mode (-O2 vs -Os), LTO and section flags (-ffunction-sections, -s), and caches them
(``~/.cache/zig``, or ``$ZIG_GLOBAL_CACHE_DIR``): about 1.5 minutes per combination on 2 cores, then seconds.

`find` uses the ziglang package of ``$DTORCH_ZIG_PYTHON`` (default: the running interpreter).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from dtorch.edge.toolchains import Found, Toolchain, pip_install_command, probe_version, which

#: The ziglang release dtorch pins (pyproject.toml) and tests.
ZIG_VERSION = "0.17.0"

#: arch -> zig target triple
TARGETS = {
    "aarch64": "aarch64-linux-musl",
    "armv7": "arm-linux-musleabihf",
    "riscv64": "riscv64-linux-musl",
    "hexagon": "hexagon-linux-musl",
}

#: Architectures where zig's LTO is off for C++ that uses exceptions, and why. On arm-linux-musleabihf (zig 0.17.0,
#: -O2 and -Os alike) a program linked with -flto aborts on its first C++ throw ("terminating due to uncaught
#: exception"): the ARM EHABI unwind path breaks; without -flto it unwinds. aarch64 and riscv64 unwind fine with
#: LTO. Code that throws nothing (-fno-exceptions: every board build of the runtime) links with LTO there too:
#: the rv1126 SimpleNet runtime is 5% smaller with it (172 -> 163 KB) for 1.5% more instructions per inference.
NO_LTO = {"armv7": "LTO only without C++ exceptions: they do not unwind on arm-linux-musleabihf with -flto"}

#: arch -> the GNU triple whose cross binutils can stand in for tools zig lacks (nm, size, readelf); hexagon has none
#: (Debian ships no hexagon binutils): llvm-nm and friends read it
_GNU = {"aarch64": "aarch64-linux-gnu", "armv7": "arm-linux-gnueabihf", "riscv64": "riscv64-linux-gnu"}


class Zig(Toolchain):
    family = "zig"
    description = f"zig c++ from the ziglang PyPI package ({ZIG_VERSION}; static musl binaries)"

    @property
    def arches(self) -> tuple[str, ...]:
        return tuple(TARGETS)

    @staticmethod
    def _python(env: Mapping[str, str] | None) -> str:
        e = env if env is not None else os.environ
        return e.get("DTORCH_ZIG_PYTHON") or sys.executable

    def install_command(self, arch: str, python: str | None = None) -> str:
        self.check_arch(arch)
        return pip_install_command(f"ziglang=={ZIG_VERSION}", python)

    def find(self, arch: str, env: Mapping[str, str] | None = None) -> Found:
        self.check_arch(arch)
        python = self._python(env)
        triple = TARGETS[arch]
        zig = (python, "-m", "ziglang")
        version = probe_version([*zig, "version"])
        if version is None:
            return self.missing(arch, f"the ziglang package is not installed for {python}",
                                install=self.install_command(arch, python), target=triple, kind="zig")
        notes = [] if version == ZIG_VERSION else [f"dtorch pins ziglang {ZIG_VERSION}; this is {version}"]
        lto = arch not in NO_LTO
        if not lto:
            notes.append(NO_LTO[arch])
        tools: dict[str, tuple[str, ...]] = {"ar": (*zig, "ar"), "ranlib": (*zig, "ranlib"),
                                             "objcopy": (*zig, "objcopy")}
        for tool in ("strip", "nm", "size", "readelf"):
            # llvm-<tool> reads every architecture; else the GNU cross binutils of this arch, when installed.
            path = which(f"llvm-{tool}", env) or (which(f"{_GNU[arch]}-{tool}", env) if arch in _GNU else None)
            if path:
                tools[tool] = (path,)
        return Found(family=self.family, arch=arch, found=True, cxx=(*zig, "c++"), version=f"zig {version}",
                     install=self.install_command(arch, python), reason="; ".join(notes), target=triple,
                     kind="zig", lto=lto, lto_without_exceptions=True, tools=tools)

    def target_flags(self, found: Found) -> list[str]:
        return ["-target", found.target]


TOOLCHAIN = Zig()
