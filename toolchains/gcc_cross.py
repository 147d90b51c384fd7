"""gcc-cross: Debian's GCC cross compilers (g++-aarch64-linux-gnu, g++-arm-linux-gnueabihf, g++-riscv64-linux-gnu).

Static glibc binaries; the board file supplies the CPU flags (``-mcpu=cortex-a76``, ``-mfpu=neon-vfpv4
-mfloat-abi=hard``, ``-march=rv64gc -mabi=lp64d``). LTO is ``-flto=auto`` (GCC's LTO plugin always ships);
archives of LTO objects need ``<triple>-gcc-ar`` (Found.tools["ar"]), not plain ``ar``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dtorch.edge.toolchains import Found, Toolchain, apt_install_command, probe_version, which

#: arch -> (GNU triple, Debian package)
TARGETS = {
    "aarch64": ("aarch64-linux-gnu", "g++-aarch64-linux-gnu"),
    "armv7": ("arm-linux-gnueabihf", "g++-arm-linux-gnueabihf"),
    "riscv64": ("riscv64-linux-gnu", "g++-riscv64-linux-gnu"),
}


class GccCross(Toolchain):
    family = "gcc-cross"
    description = "Debian's GCC cross compilers (static glibc binaries)"

    @property
    def arches(self) -> tuple[str, ...]:
        return tuple(TARGETS)

    def install_command(self, arch: str) -> str:
        self.check_arch(arch)
        return apt_install_command(TARGETS[arch][1])

    def find(self, arch: str, env: Mapping[str, str] | None = None) -> Found:
        self.check_arch(arch)
        triple, _ = TARGETS[arch]
        cxx = which(f"{triple}-g++", env)
        if cxx is None:
            return self.missing(arch, f"{triple}-g++ is not on PATH", target=triple, kind="gcc")
        version = probe_version([cxx, "--version"])
        if version is None:
            return self.missing(arch, f"{cxx} --version failed", target=triple, kind="gcc")
        tools: dict[str, tuple[str, ...]] = {}
        for tool, exe in (("ar", "gcc-ar"), ("ranlib", "gcc-ranlib"), ("strip", "strip"), ("objcopy", "objcopy"),
                          ("nm", "gcc-nm"), ("size", "size"), ("readelf", "readelf")):
            path = which(f"{triple}-{exe}", env)
            if path:
                tools[tool] = (path,)
        return Found(family=self.family, arch=arch, found=True, cxx=(cxx,), version=version,
                     install=self.install_command(arch), target=triple, kind="gcc", lto=True, tools=tools)

    def lto_flag(self, found: Found) -> str:
        return "-flto=auto"  # parallel LTRANS (and no "serial compilation" note)

    def arch_libs(self, found: Found) -> list[str]:
        # riscv64: GCC 12 calls libatomic for 1- and 2-byte atomics (std::atomic<bool>/<char>); Debian's driver adds
        # -latomic only under -pthread, as-needed. Name it explicitly so any link works.
        return ["-latomic"] if found.arch == "riscv64" else []


TOOLCHAIN = GccCross()
