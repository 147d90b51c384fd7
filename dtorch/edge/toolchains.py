"""Toolchain families: the interface each ``toolchains/<family>.py`` module implements, and the loader.

A family (``gcc-cross``, ``zig``, ``host``) knows, for each architecture it targets:

* `Toolchain.find`: whether its compiler is here, the compiler's argv (e.g. ``["aarch64-linux-gnu-g++"]`` or
  ``[python, "-m", "ziglang", "c++"]``), its version, and the binutils-like tools for size reports;
* `Toolchain.flags`: the compile and link flags for a board: the board's CPU flags as this family spells them,
  ``-Os``/``-O2`` by the board's profile, ``-ffunction-sections -fdata-sections``, ``-Wl,--gc-sections``, LTO
  where the toolchain supports it, static linking, ``-s``;
* `Toolchain.install_command`: the exact command that installs it when it is missing.

The modules live in the ``toolchains/`` folder of the resource root (see `dtorch.edge.resources`) and are loaded
by path; each defines ``TOOLCHAIN``, an instance of a `Toolchain` subclass.

    >>> from dtorch.edge.boards import load_board
    >>> from dtorch.edge.toolchains import get_toolchain
    >>> board = load_board("rk3588")
    >>> tc = get_toolchain("gcc-cross")
    >>> found = tc.find(board.arch)
    >>> flags = tc.flags(found, board)
    >>> argv = command_line(found, flags, ["main.cc"], "main")  # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .boards import Board

__all__ = [
    "BuildFlags",
    "Found",
    "Toolchain",
    "ToolchainError",
    "ToolchainMissing",
    "apt_install_command",
    "command_line",
    "get_toolchain",
    "load_toolchains",
    "pip_install_command",
    "probe_version",
    "select_toolchain",
    "toolchains_dir",
    "which",
]

#: The tools `Found.tools` may name (each an argv prefix): ar/ranlib for static libraries (LTO-aware), and
#: strip/objcopy/nm/size/readelf for size reports.
TOOL_NAMES = ("ar", "ranlib", "strip", "objcopy", "nm", "size", "readelf")


class ToolchainError(RuntimeError):
    """An unknown toolchain family, a family that cannot target an architecture, or a broken toolchain module."""


class ToolchainMissing(ToolchainError):
    """No usable compiler: the message carries the exact command(s) that install one."""

    def __init__(self, message: str, missing: Sequence[Found] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


@dataclass(frozen=True)
class Found:
    """What `Toolchain.find` saw for one family and architecture."""

    family: str
    arch: str
    found: bool
    cxx: tuple[str, ...] = ()          # the C++ driver's argv prefix; empty when not found
    version: str | None = None          # e.g. "aarch64-linux-gnu-g++ (Debian 12.2.0-14) 12.2.0", "zig 0.17.0"
    install: str = ""                   # the exact command that installs this family for this arch
    reason: str = ""                    # why it is missing (or a caveat when found)
    target: str = ""                    # the target triple
    kind: str = ""                      # the compiler: "gcc", "clang" or "zig"
    lto: bool = True                    # whether link-time optimisation works with this install
    lto_without_exceptions: bool = False  # LTO works for code compiled with -fno-exceptions (even where `lto` is
                                          # False because it breaks C++ unwinding)
    link_extra: tuple[str, ...] = ()    # link flags this install needs (e.g. -fuse-ld=lld for clang's LTO)
    tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def require(self) -> Found:
        """Self when found, else raise `ToolchainMissing` with the install command."""
        if not self.found:
            raise ToolchainMissing(
                f"toolchain '{self.family}' for {self.arch} is missing ({self.reason}); install it with: "
                f"{self.install}", [self])
        return self

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "arch": self.arch, "found": self.found, "command": list(self.cxx),
                "version": self.version, "target": self.target, "kind": self.kind, "lto": self.lto,
                "lto_without_exceptions": self.lto_without_exceptions,
                "install": None if self.found else self.install, "reason": self.reason,
                "tools": {k: list(v) for k, v in self.tools.items()}}


@dataclass(frozen=True)
class BuildFlags:
    """Flags for one build: `cxxflags` on every compile, `ldflags` on the link (before the objects), `libs`
    after the objects. The link line repeats the target, CPU and optimisation flags (LTO and zig need them)."""

    cxxflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    libs: tuple[str, ...] = ()
    lto: bool = False
    static: bool = True
    strip: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"cxxflags": list(self.cxxflags), "ldflags": list(self.ldflags), "libs": list(self.libs),
                "lto": self.lto, "static": self.static, "strip": self.strip}


def which(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """`shutil.which` on `env`'s PATH (the process's when `env` is None)."""
    path = (env if env is not None else os.environ).get("PATH", "")
    return shutil.which(name, path=path)


@functools.lru_cache(maxsize=64)
def _probe(argv: tuple[str, ...], timeout: float) -> tuple[int, str]:
    try:
        p = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, str(e)
    return p.returncode, (p.stdout or p.stderr)


def probe_version(argv: Sequence[str], timeout: float = 30.0) -> str | None:
    """The first non-empty output line of `argv` (e.g. ``[cxx, "--version"]``), or None when it fails. Cached."""
    rc, out = _probe(tuple(argv), timeout)
    if rc != 0:
        return None
    for line in out.splitlines():
        if line.strip():
            return line.strip()
    return None


class Toolchain(ABC):
    """One toolchain family. Subclasses set `family`, `arches`, `description` and implement the abstract methods;
    the common flag logic is here so that every family builds the same way."""

    #: The family's name, as board files list it ("gcc-cross", "zig", "host").
    family: str = ""
    #: A line for `dtorch-edge doctor`.
    description: str = ""

    @property
    def arches(self) -> tuple[str, ...]:
        """The architectures (board-file spelling) this family can target from this machine."""
        return ()

    def check_arch(self, arch: str) -> None:
        if arch not in self.arches:
            raise ToolchainError(f"toolchain '{self.family}' cannot target {arch} (it targets: "
                                 f"{', '.join(self.arches) or 'nothing here'})")

    @abstractmethod
    def find(self, arch: str, env: Mapping[str, str] | None = None) -> Found:
        """Look for the compiler for `arch` on `env`'s PATH (the process environment when None)."""

    @abstractmethod
    def install_command(self, arch: str) -> str:
        """The exact shell command that installs this family for `arch`."""

    # Hooks the families override -------------------------------------------------------------------------------
    def target_flags(self, found: Found) -> list[str]:
        """Flags that select the target (zig: ``-target aarch64-linux-musl``); on compiles and links."""
        return []

    def arch_libs(self, found: Found) -> list[str]:
        """Libraries the link needs after the objects for this arch (e.g. ``-latomic`` on riscv64 with glibc)."""
        return []

    def lto_flag(self, found: Found) -> str:
        return "-flto"

    # The shared flag logic ---------------------------------------------------------------------------------------
    def flags(self, found: Found, board: Board, *, lto: bool | None = None, strip: bool = True,
              static: bool = True, profile: str | None = None, exceptions: bool = True) -> BuildFlags:
        """Compile and link flags for `board` with this toolchain (as found by `find`).

        `lto` defaults to what the toolchain supports (for a build without C++ exceptions, `exceptions=False`, that
        includes the installs whose LTO breaks only unwinding); `profile` ("size" or "speed") overrides the board's.
        Language and warning flags (``-std=c++17 -Wall ...``, ``-ffp-contract=off``) are the build's, not these.
        """
        from .boards import PROFILES, BoardError

        if found.family != self.family:
            raise ToolchainError(f"flags of '{self.family}' asked for a '{found.family}' toolchain")
        if board.arch != found.arch:
            raise ToolchainError(f"board '{board.name}' is {board.arch} but this '{self.family}' toolchain was found "
                                 f"for {found.arch}")
        prof = profile or board.profile
        if prof not in PROFILES:
            raise BoardError(f"unknown profile {prof!r} (one of {', '.join(PROFILES)})")
        opt = PROFILES[prof]
        bf = board.flags_for(self.family)
        lto_works = found.lto or (not exceptions and found.lto_without_exceptions)
        use_lto = lto_works if lto is None else (lto and lto_works)
        target = self.target_flags(found)
        codegen = [*target, *bf.cxxflags, opt]
        lto_flags = [self.lto_flag(found)] if use_lto else []
        cxxflags = [*codegen, "-ffunction-sections", "-fdata-sections", *lto_flags, "-pthread"]
        ldflags = [*codegen, *lto_flags, "-pthread", "-Wl,--gc-sections"]
        if static:
            ldflags.append("-static")
        if strip:
            ldflags.append("-s")
        ldflags += [*found.link_extra, *bf.ldflags]
        return BuildFlags(cxxflags=tuple(cxxflags), ldflags=tuple(ldflags), libs=tuple(self.arch_libs(found)),
                          lto=use_lto, static=static, strip=strip)

    def map_flags(self, path: str | os.PathLike[str]) -> list[str]:
        """Link flags that write a linker map to `path` (GNU ld and lld both take this)."""
        return [f"-Wl,-Map={os.fspath(path)}"]

    def missing(self, arch: str, reason: str, *, install: str | None = None, **kw: Any) -> Found:
        """A not-found `Found` for `arch`, with the install command."""
        return Found(family=self.family, arch=arch, found=False, install=install or self.install_command(arch),
                     reason=reason, **kw)

    def __repr__(self) -> str:
        return f"<toolchain {self.family} ({', '.join(self.arches)})>"


def apt_install_command(*packages: str) -> str:
    """``apt-get install -y PKG...`` (with ``sudo`` when not root and sudo exists)."""
    sudo = "sudo " if hasattr(os, "geteuid") and os.geteuid() != 0 and shutil.which("sudo") else ""
    return f"{sudo}apt-get install -y {' '.join(packages)}"


def pip_install_command(requirement: str, python: str | None = None) -> str:
    """``<python> -m pip install REQUIREMENT`` for this interpreter (the venv's python when dtorch runs in one)."""
    return f"{shlex.quote(python or sys.executable)} -m pip install {shlex.quote(requirement)}"


def command_line(found: Found, flags: BuildFlags, sources: Sequence[str | os.PathLike[str]],
                 output: str | os.PathLike[str], extra_cxxflags: Sequence[str] = ()) -> list[str]:
    """One compile-and-link argv for a few sources (tests and probes; the real build compiles objects in SCons)."""
    found.require()
    return [*found.cxx, *extra_cxxflags, *flags.cxxflags, *flags.ldflags, *map(os.fspath, sources),
            "-o", os.fspath(output), *flags.libs]


# --- loading the family modules -------------------------------------------------------------------------------

def toolchains_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """The toolchains folder: ``<root>/toolchains``, where `root` defaults to `resource_root()`."""
    return _default_dir(root)


def _default_dir(root: str | os.PathLike[str] | None) -> Path:
    if root is None:
        from .resources import resource_root

        root = resource_root()
    return Path(root) / "toolchains"


def _load_module(path: Path) -> ModuleType:
    name = f"dtorch_toolchains.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ToolchainError(f"{path}: cannot load this toolchain module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(name, None)
        raise ToolchainError(f"{path}: the toolchain module failed to load: {type(e).__name__}: {e}") from e
    return module


@functools.lru_cache(maxsize=8)
def _load_all(directory: Path) -> dict[str, Toolchain]:
    if not directory.is_dir():
        raise ToolchainError(f"no toolchains folder at {directory}")
    out: dict[str, Toolchain] = {}
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = _load_module(path)
        tc = getattr(module, "TOOLCHAIN", None)
        if not isinstance(tc, Toolchain):
            raise ToolchainError(f"{path}: defines no TOOLCHAIN (an instance of dtorch.edge.toolchains.Toolchain)")
        if not tc.family:
            raise ToolchainError(f"{path}: its toolchain has no family name")
        if tc.family in out:
            raise ToolchainError(f"{path}: family '{tc.family}' is defined twice")
        out[tc.family] = tc
    return out


def load_toolchains(root: str | os.PathLike[str] | None = None, *,
                    toolchains_dir: str | os.PathLike[str] | None = None) -> dict[str, Toolchain]:
    """Every family in the toolchains folder, by name (loaded once per folder)."""
    d = Path(toolchains_dir) if toolchains_dir is not None else _default_dir(root)
    return dict(_load_all(d.resolve()))


def get_toolchain(family: str, root: str | os.PathLike[str] | None = None, *,
                  toolchains_dir: str | os.PathLike[str] | None = None) -> Toolchain:
    """The family called `family`; an unknown name raises `ToolchainError` with the families and the closest one."""
    families = load_toolchains(root, toolchains_dir=toolchains_dir)
    if family not in families:
        close = difflib.get_close_matches(family, list(families), n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ToolchainError(f"unknown toolchain family '{family}'{hint} Families: {', '.join(sorted(families))}")
    return families[family]


def select_toolchain(board: Board, override: str | None = None, env: Mapping[str, str] | None = None, *,
                     root: str | os.PathLike[str] | None = None) -> tuple[Toolchain, Found]:
    """The first family of `board.toolchains` that is found for the board's arch (or `override`, which need not be
    in the board's list but must have flags in its file). Raises `ToolchainMissing` with the install commands."""
    names = [override] if override else list(board.toolchains)
    tried: list[Found] = []
    for name in names:
        tc = get_toolchain(name, root)
        if override:
            board.flags_for(name)  # a clear BoardError before anything else
        if board.arch not in tc.arches:
            if override:
                raise ToolchainError(f"toolchain '{name}' cannot target {board.arch} (board '{board.name}'); it "
                                     f"targets: {', '.join(tc.arches) or 'nothing here'}")
            continue
        found = tc.find(board.arch, env)
        if found.found:
            return tc, found
        tried.append(found)
    if not tried:
        raise ToolchainError(f"none of board '{board.name}''s toolchains ({', '.join(names)}) targets {board.arch}")
    lines = "; ".join(f"{f.family}: {f.install}" for f in tried)
    raise ToolchainMissing(f"no toolchain for board '{board.name}' ({board.arch}) is installed "
                           f"(tried {', '.join(f.family for f in tried)}); install one with: {lines}", tried)
