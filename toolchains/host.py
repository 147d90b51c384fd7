"""host: the machine's own C++ compiler ($CXX if set, else g++, else clang++), for the host board.

Static binaries where the C library allows it (glibc's libc.a: Debian's libc6-dev). LTO: g++ always; clang++
when the LLVM gold plugin (LLVMgold.so) or ld.lld is there.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from dtorch.edge.boards import host_arch
from dtorch.edge.toolchains import Found, Toolchain, apt_install_command, probe_version, which


def _clang_lto(cxx: str, env: Mapping[str, str]) -> tuple[bool, tuple[str, ...]]:
    """Whether clang can link with -flto here, and the extra link flags that takes."""
    real = Path(os.path.realpath(cxx))
    if (real.parent.parent / "lib" / "LLVMgold.so").exists():
        return True, ()
    if which("ld.lld", env):
        return True, ("-fuse-ld=lld",)
    return False, ()


def _executable(name: str, env: Mapping[str, str]) -> str | None:
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return which(name, env)


class Host(Toolchain):
    family = "host"
    description = "the host's own g++ or clang++ ($CXX first)"

    @property
    def arches(self) -> tuple[str, ...]:
        return (host_arch(),)

    def install_command(self, arch: str) -> str:
        self.check_arch(arch)
        return apt_install_command("g++")

    def find(self, arch: str, env: Mapping[str, str] | None = None) -> Found:
        self.check_arch(arch)
        e = env if env is not None else os.environ
        candidates: list[list[str]] = []
        if e.get("CXX"):
            candidates.append(shlex.split(e["CXX"]))
        candidates += [["g++"], ["clang++"]]
        for argv in candidates:
            exe = _executable(argv[0], e)
            if exe is None:
                continue
            cxx = (exe, *argv[1:])
            version = probe_version([*cxx, "--version"])
            if version is None:
                continue
            kind = "clang" if "clang" in version.lower() else "gcc"
            lto, link_extra = (True, ()) if kind == "gcc" else _clang_lto(exe, e)
            names = {"ar": "gcc-ar", "ranlib": "gcc-ranlib", "nm": "gcc-nm"} if kind == "gcc" else \
                {"ar": "llvm-ar", "ranlib": "llvm-ranlib", "nm": "llvm-nm"}
            tools: dict[str, tuple[str, ...]] = {}
            for tool in ("ar", "ranlib", "strip", "objcopy", "nm", "size", "readelf"):
                path = which(names.get(tool, tool), e) or which(tool, e)
                if path:
                    tools[tool] = (path,)
            return Found(family=self.family, arch=arch, found=True, cxx=cxx, version=version,
                         install=self.install_command(arch), target=probe_version([*cxx, "-dumpmachine"]) or "",
                         kind=kind, lto=lto, link_extra=link_extra,
                         reason="" if lto else "no LLVMgold.so or ld.lld: LTO off", tools=tools)
        tried = ", ".join(c[0] for c in candidates)
        return self.missing(arch, f"no C++ compiler on PATH (tried {tried})", kind="gcc")

    def lto_flag(self, found: Found) -> str:
        return "-flto=auto" if found.kind == "gcc" else "-flto"


TOOLCHAIN = Host()
