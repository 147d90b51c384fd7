"""The ISA kernel sets of the runtime: every folder runtime/kernels/<set>/ that holds a kernel_set.json.

A kernel set's files are compiled with extra ISA flags (e.g. -mavx2 -mfma) on top of the runtime's, and only for
the architectures it names; each of its kernels registers itself at start-up only on a CPU that has the ISA.
A set that lists `requires` (board ISA features, e.g. ["neon"]) also goes into the cross builds of the boards whose
board file lists them all (dtorch.edge.build_plan: chosen at build time, by the board's ISA list), when the build's
compiler is one of its `compilers` (if it names any: RVV intrinsics need clang or zig).
Every build of the runtime (setup.py for the Python module, SConstruct for dtorch-run, dtorch.edge.build_plan
for a host board build) takes the sets from here, so adding a set touches no build code.

Each set's flags also define DTORCH_KERNEL_ISA=isa_<name>: the inline namespace that keeps the set's copies of
the shared kernel helpers apart from the baseline ones (runtime/kernels/common/isa.h), and DTORCH_KERNEL_RANK, the
set's `rank`: where several sets register one (operator, dtype), the runtime runs the highest-ranked one the CPU and
the kernel policy allow (portable's rank is 0). A new set names its rank here, in no central list.

The x86-64 sets list -fno-lto: their objects share no code with the rest that LTO could inline (their helpers are
their own copies), and their templates are most of a host build's code generation (the avx512 conv2d alone: ~55 s
at -O2). Compiled without LTO, that code is generated once per object, which every later host build with the same
flags shares (build_plan.BuildPlan.objects_dir), instead of again in every LTO link (~70 s each).

Standard library only: setup.py loads this file by path, before dtorch is installed.
"""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KernelSet", "KernelSetError", "host_arch", "kernel_sets"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class KernelSetError(ValueError):
    """A kernel_set.json that cannot be used (unreadable, malformed, or naming another folder)."""


@dataclass(frozen=True)
class KernelSet:
    name: str                   # the folder's name = the set name kernels register under
    folder: Path                # runtime/kernels/<name>
    arch: tuple[str, ...]       # architectures it is built for (platform.machine() spelling: x86_64, aarch64)
    isa_flags: tuple[str, ...]  # the ISA flags of its files
    requires: tuple[str, ...] = ()  # board ISA features (a board file's `isa` list) it needs; () = a host-only set
    compilers: tuple[str, ...] = ()  # compiler kinds that build it ("gcc", "clang", "zig"); () = any
    exact: bool = False         # its kernels keep the portable kernels' bits (the "exact" policy takes them)
    rank: int = 1               # its kernels' priority over portable's 0 (passed as DTORCH_KERNEL_RANK)

    def builds_with(self, kind: str) -> bool:
        """Whether a compiler of this kind (a found toolchain's: gcc, clang, zig) builds the set's files (e.g. RVV
        intrinsics need clang)."""
        return not self.compilers or kind in self.compilers

    def for_board(self, arch: str, isa: tuple[str, ...] | list[str]) -> bool:
        """Whether a cross build for a board of `arch` whose ISA list is `isa` takes this set: the architecture is
        one of the set's and the board lists every feature the set requires. Host-only sets (no `requires`, e.g.
        the x86-64 ones, which check the CPU when they register) never go to a board."""
        return bool(self.requires) and arch in self.arch and set(self.requires) <= set(isa)

    @property
    def flags(self) -> tuple[str, ...]:
        """Everything its files are compiled with on top of the runtime's flags."""
        return (*self.isa_flags, f"-DDTORCH_KERNEL_ISA=isa_{self.name}", f"-DDTORCH_KERNEL_RANK={self.rank}")

    def sources(self) -> list[Path]:
        return sorted(self.folder.glob("*.cc"))


def host_arch() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def kernel_sets(runtime_dir: str | os.PathLike[str], arch: str | None = None) -> list[KernelSet]:
    """The ISA kernel sets under runtime_dir/kernels, by name; only those built for `arch` when it is given."""
    out: list[KernelSet] = []
    for desc in sorted(Path(runtime_dir, "kernels").glob("*/kernel_set.json")):
        try:
            data = json.loads(desc.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise KernelSetError(f"cannot read {desc}: {e}") from None
        name = data.get("name") if isinstance(data, dict) else None
        if name != desc.parent.name or not isinstance(name, str) or not _NAME.match(name):
            raise KernelSetError(f"{desc}: 'name' must be the folder's name {desc.parent.name!r}, got {name!r}")
        archs, flags = data.get("arch"), data.get("flags")
        if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
            raise KernelSetError(f"{desc}: 'arch' must be a non-empty list of architecture names")
        if not (isinstance(flags, list) and all(isinstance(f, str) and f.startswith("-") for f in flags)):
            raise KernelSetError(f"{desc}: 'flags' must be a list of compiler flags")
        req = data.get("requires", [])
        if not (isinstance(req, list) and all(isinstance(f, str) and f for f in req)):
            raise KernelSetError(f"{desc}: 'requires' must be a list of board ISA features (a board file's `isa`)")
        comp = data.get("compilers", [])
        if not (isinstance(comp, list) and all(c in ("gcc", "clang", "zig") for c in comp)):
            raise KernelSetError(f"{desc}: 'compilers' must be a list of compiler kinds (gcc, clang, zig)")
        exact = data.get("exact", False)
        if not isinstance(exact, bool):
            raise KernelSetError(f"{desc}: 'exact' must be true or false (whether its kernels keep portable's bits)")
        rank = data.get("rank")
        if not (isinstance(rank, int) and not isinstance(rank, bool) and 1 <= rank <= 1000):
            raise KernelSetError(f"{desc}: 'rank' must be an integer in [1, 1000] (the priority over portable's 0)")
        ks = KernelSet(name, desc.parent, tuple(archs), tuple(flags), tuple(req), tuple(comp), exact, rank)
        if arch is None or arch in ks.arch:
            out.append(ks)
    return out
