"""What a board build compiles and how: the one description SConstruct turns into build steps and `dtorch-edge
build` records in the bundle's manifest.

A plan names the board, the toolchain family found for it, the compile and link flags (the board's CPU flags,
-O2/-Os by profile, sections + --gc-sections, LTO where supported, static, stripped), the op list and the source
files: the runtime core, the kernel files of the listed operators only (one operator = one kernel file), and
dtorch-run. It also fixes the build's identity, compiled into the binary and written to the manifest:

* the op-set hash: sha256 of the sorted ``op:dtype`` list;
* the runtime hash: sha256 of the runtime version, every source and header that goes into the binary, the
  flags and the compiler's version: two binaries with the same runtime hash were built from the same inputs.

This module is imported by SConstruct (with the checkout on sys.path), so it uses only the standard library and
dtorch.edge's light modules.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .boards import Board, load_board
from .kernel_sets import host_arch
from .oplist import OpList, OpListError, kernel_catalog
from .sources import BARE_METAL, RUNTIME, load_sources
from .toolchains import BuildFlags, Found, Toolchain, select_toolchain

__all__ = ["BuildPlan", "PlanError", "make_plan", "LANGUAGE_FLAGS", "LINK_LANGUAGE_FLAGS", "CORE_FLAGS"]

#: Flags every board build of the runtime uses (DESIGN.md "Numerics": never -ffast-math). The runtime reports
#: errors as Status values and never throws or uses RTTI, so board builds leave out C++ exceptions and RTTI: with
#: zig's libc++ that drops the unwinder and the demangler its terminate handler links (~130 KB of a ~460 KB
#: binary).
#: Nothing unwinds the stack in a board binary (no exceptions, and apps/no_exceptions.cc keeps the unwinder out), so
#: it carries no unwind tables either.
LANGUAGE_FLAGS = ("-std=c++17", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", "-fno-fast-math",
                  "-fno-exceptions", "-fno-rtti", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
#: The same on the link line: zig builds the C and C++ libraries it links with them (libc++ without exceptions'
#: terminate path, musl without most of its unwind tables).
LINK_LANGUAGE_FLAGS = ("-fno-exceptions", "-fno-rtti", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")

#: The runtime core and dtorch-run (loader, verifier, planner, executor, CLI) are built for size on every profile:
#: they run once per load or once per node, not per element, and they are most of a pruned binary. The kernels take
#: the profile's level (-O2 for "speed"). A later flag wins, so this follows the profile's.
CORE_FLAGS = ("-Os",)


#: The runtime's source groups (runtime/sources.json) a board build links, in this order: the runtime (its portable
#: kernels pruned to the op list), dtorch-run ("app", and "board_app", which keeps the C++ demangler out), then,
#: with zig's static libc++ only, "libcxx": its exception entry points as calls that abort, which keeps the C++
#: unwinder out (~40 KB). GNU libsupc++ defines them in archive members that other symbols pull in, so with gcc
#: they would be defined twice.
_APP_GROUPS = ("app", "app_common", "board_app")
#: dtorch-agent (runtime/apps/agent/, Linux boards only) links the same runtime objects with its own sources in place
#: of dtorch-run's, and libsodium's C files (dtorch.edge.third_party; compiled with `c_flags`).
_AGENT_GROUPS = ("agent_main", "agent", "app_common", "board_app")
#: ... and, with nothing left to read them, the libraries' unwind tables dropped at link (relative to the resource
#: root, where SCons runs; the script's bytes are part of the runtime hash).
_LIBCXX_LINK_SCRIPTS = ("toolchains/zig_no_unwind.ld",)


class PlanError(ValueError):
    """A build that cannot be planned: unknown op, missing kernel, bad arguments."""


@dataclass(frozen=True)
class Source:
    path: Path                 # absolute
    rel: str                   # relative to the runtime folder, e.g. "kernels/portable/conv2d.cc"
    extra_flags: tuple[str, ...] = ()
    build_info: bool = False   # includes the build's own dtorch_build_info.h (dtorch-run's and the agent's main)


@dataclass(frozen=True)
class BuildPlan:
    board: Board
    toolchain: Toolchain
    found: Found
    flags: BuildFlags
    ops: OpList
    root: Path                 # the resource root (holds runtime/, SConstruct)
    sources: tuple[Source, ...]
    runtime_hash: str = ""
    opset_hash: str = ""
    runtime_version: str = ""
    profile: str = ""          # "speed" (-O2) or "size" (-Os): the board's, or the one asked for
    link_scripts: tuple[str, ...] = ()  # linker scripts the link reads, relative to the root
    agent_sources: tuple[Source, ...] = ()  # dtorch-agent's (empty for a board without one: not a Linux board)
    kernel_sets: tuple[str, ...] = ()       # the ISA kernel sets built in (beside portable): those with a kernel of the op list
    kernel_set_notes: tuple[str, ...] = ()  # why a set the board's ISA calls for is not (e.g. its compiler)
    kernels: str = "fast"                   # "exact": only sets that keep the portable bits (boards: portable)

    @property
    def profile_overridden(self) -> bool:
        return bool(self.profile) and self.profile != self.board.profile

    @property
    def variant(self) -> str:
        """The build folder, relative to the root: build/<board>/<toolchain>/<op-set hash[:12]>, with -<profile> when
        the build asks for another profile than the board's."""
        ops = "all" if self.ops.all_ops else self.opset_hash[:12]
        suffix = ("-" + self.profile if self.profile_overridden else "") + ("-exact" if self.kernels == "exact" else "")
        return f"build/{self.board.name}/{self.toolchain.family}/{ops}{suffix}"

    @property
    def objects_dir(self) -> str:
        """The folder of the build's objects, relative to the root: build/<board>/<toolchain>/obj-<hash[:12]> of the
        compiler and its flags. An object does not depend on the op list (a pruned build compiles fewer files, not
        other ones), so every build of the board with the same compiler and flags (other models, the full runtime
        for the size comparison, the agent) shares it: each file is compiled once. Only the sources that include the
        build's own dtorch_build_info.h are compiled per build, into the variant's obj/."""
        key = "\0".join([*self.found.cxx, "|", *self.compile_flags])
        return f"build/{self.board.name}/{self.toolchain.family}/obj-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    @property
    def include_dirs(self) -> tuple[str, ...]:
        """The compiles' include folders, relative to the root, in order: the build's own (dtorch_build_info.h), the
        build tree's (FlatBuffers' link), the runtime's."""
        return (f"{self.variant}/include", "build/include", "runtime/include", "runtime", "runtime/schema")

    def object_path(self, src: Source) -> str:
        """Where `src`'s object goes, relative to the root."""
        folder = f"{self.variant}/obj" if src.build_info else self.objects_dir
        return f"{folder}/{src.rel[:-3]}.o"

    @property
    def compile_flags(self) -> tuple[str, ...]:
        return (*LANGUAGE_FLAGS, *self.flags.cxxflags)

    @property
    def link_flags(self) -> tuple[str, ...]:
        return (*self.flags.ldflags, *LINK_LANGUAGE_FLAGS, *(f"-Wl,-T,{p}" for p in self.link_scripts))

    @property
    def has_agent(self) -> bool:
        """Whether the bundle carries dtorch-agent (Linux boards: those run by qemu-user, and the host)."""
        return bool(self.agent_sources)

    @property
    def c_flags(self) -> tuple[str, ...]:
        """The flags libsodium's C files are compiled with, by the build's C++ driver: C, the board's CPU, target,
        optimisation, section and LTO flags, no unwind tables; not the runtime's -Werror (third-party code)."""
        return ("-x", "c", "-std=gnu11", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", *self.flags.cxxflags)

    def build_info_header(self) -> str:
        """dtorch_build_info.h: the identity dtorch-run prints (--info) and checks a bundle's manifest against."""
        ops = " ".join(self.ops.entries())
        return (
            "// Generated by dtorch.edge.build_plan for this build; do not edit.\n"
            "#pragma once\n"
            f'#define DTORCH_BUILD_BOARD "{self.board.name}"\n'
            f'#define DTORCH_BUILD_TOOLCHAIN "{self.toolchain.family}"\n'
            f'#define DTORCH_BUILD_RUNTIME_HASH "{self.runtime_hash}"\n'
            f'#define DTORCH_BUILD_OPSET_HASH "{self.opset_hash}"\n'
            f'#define DTORCH_BUILD_OPS "{ops}"\n'
        )

    def to_json(self) -> dict:
        return {
            "board": self.board.name, "arch": self.board.arch, "toolchain": self.toolchain.family,
            "toolchain_version": self.found.version, "compiler": list(self.found.cxx),
            "cxxflags": list(self.compile_flags), "core_cxxflags": list(CORE_FLAGS),
            "ldflags": list(self.link_flags), "libs": list(self.flags.libs),
            "lto": self.flags.lto, "profile": self.profile, "runtime_version": self.runtime_version,
            "runtime_hash": self.runtime_hash,
            "opset_hash": self.opset_hash, "ops": self.ops.entries(),
            "kernel_files": sorted(s.rel for s in self.sources if s.rel.startswith("kernels/")),
            "kernel_sets": list(self.kernel_sets), "kernel_set_notes": list(self.kernel_set_notes),
            "kernels": self.kernels,
            "variant": self.variant,
        }


def _runtime_version(runtime: Path) -> str:
    m = re.search(r'kRuntimeVersion\s*=\s*"([^"]+)"', (runtime / "include" / "dtorch" / "version.h").read_text())
    return m.group(1) if m else "unknown"


def make_plan(board: str | Board, *, toolchain: str | None = None, ops: OpList | None = None,
              root: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
              profile: str | None = None, kernels: str = "fast") -> BuildPlan:
    """Plan the build of `board` (a name or a loaded Board) with `toolchain` (default: the board's first family
    that is installed) for the op list `ops` (default: every kernel), with the board's profile or `profile` ("speed":
    kernels -O2, "size": -Os), and with the ISA kernel sets the board calls for (`kernels` "fast") or only those
    that keep the portable bits ("exact": a board's binary is then portable-only, the smallest, and bit-identical
    with the host). Raises BoardError (also for an unknown profile), ToolchainMissing / ToolchainError, or
    PlanError / OpListError (an operator without a kernel, named; an unknown `kernels`)."""
    from .resources import resource_root

    if kernels not in ("fast", "exact"):
        raise PlanError(f"kernels must be 'fast' (the board's SIMD kernel sets) or 'exact' (portable bits only), "
                        f"got {kernels!r}")
    base = Path(root) if root is not None else resource_root()
    runtime = base / "runtime"
    b = board if isinstance(board, Board) else load_board(board, base)
    tc, found = select_toolchain(b, toolchain, env, root=base)
    flags = tc.flags(found, b, profile=profile, exceptions="-fno-exceptions" not in LANGUAGE_FLAGS)
    op_list = ops if ops is not None else OpList.everything()

    catalog = kernel_catalog(runtime, "portable")
    try:
        catalog.check(op_list, "the op list")
    except OpListError as e:
        raise PlanError(str(e)) from None

    groups = load_sources(runtime)
    kernel_files = set(catalog.select(op_list))
    libcxx = found.kind == "zig"
    sources: list[Source] = []
    agent: list[Source] = []
    extra = ("libcxx",) if libcxx else ()

    def group_sources(group: str) -> list[Source]:
        pruned = group == "portable"
        return [Source(p, p.relative_to(runtime).as_posix(), () if pruned else CORE_FLAGS,
                       build_info=b"dtorch_build_info.h" in p.read_bytes())
                for p in groups.paths(group) if not pruned or p in kernel_files]

    for group in BARE_METAL if b.bare_metal else (*RUNTIME, *_APP_GROUPS, *extra):
        sources += group_sources(group)
    if b.name == "host" or b.emulator.kind == "qemu-user":
        agent = [s for s in sources if s.rel.startswith(("core/", "hosted/", "kernels/"))]
        for group in (*_AGENT_GROUPS, *extra):
            agent += group_sources(group)
    scripts = _LIBCXX_LINK_SCRIPTS if libcxx else ()
    # A host build carries the host's ISA kernel sets of the listed operators (registered only on CPUs that have
    # their ISA); a board build the sets its ISA list calls for (kernel_set.json `requires`, e.g. neon64 on boards
    # listing "neon"). Every board keeps the portable kernels too: the "exact" policy runs their bits.
    notes: list[str] = []
    if b.name == "host":
        chosen = groups.kernel_sets(host_arch()) if b.arch == host_arch() and found.kind in ("gcc", "clang") else []
    else:
        chosen = []
        for ks in groups.kernel_sets(b.arch):
            if not ks.for_board(b.arch, b.isa):
                continue
            if ks.builds_with(found.kind):
                chosen.append(ks)
            else:
                notes.append(f"kernel set {ks.name} left out: {found.kind} does not build it (it needs "
                             f"{' or '.join(ks.compilers)}); this build runs the portable kernels instead")
    if kernels == "exact":
        for ks in chosen:
            if not ks.exact:
                notes.append(f"kernel set {ks.name} left out (kernels=exact): this build keeps the portable bits")
        chosen = [ks for ks in chosen if ks.exact]
    built = []  # the chosen sets with a kernel for the op list: what the build carries
    for ks in chosen:
        cat = kernel_catalog(runtime, ks.name)
        isa = [Source(p, p.relative_to(runtime).as_posix(), ks.flags) for p in cat.select(op_list)]
        sources += isa
        agent += isa
        if isa:
            built.append(ks)

    h = hashlib.sha256()
    version = _runtime_version(runtime)
    h.update(f"runtime {version}\n".encode())
    headers = sorted(set(groups.paths("headers")))
    for p in [*headers, *(s.path for s in sources)]:
        h.update(p.relative_to(runtime).as_posix().encode() + b"\n")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    for s in sources:
        h.update(" ".join(s.extra_flags).encode() + b"\n")
    h.update(" ".join([*LANGUAGE_FLAGS, *flags.cxxflags, "|", *flags.ldflags, *LINK_LANGUAGE_FLAGS, "|",
                       *flags.libs]).encode())
    for script in scripts:
        h.update(b"\n" + script.encode() + b"\n" + (base / script).read_bytes())
    h.update(f"\n{found.version}\n".encode())
    return BuildPlan(board=b, toolchain=tc, found=found, flags=flags, ops=op_list, root=base,
                     sources=tuple(sources), runtime_hash=h.hexdigest(), opset_hash=op_list.sha256(), runtime_version=version,
                     profile=profile or b.profile, link_scripts=scripts, agent_sources=tuple(agent),
                     kernel_sets=tuple(ks.name for ks in built), kernel_set_notes=tuple(notes),
                     kernels=kernels)
