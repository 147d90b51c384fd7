"""Build of the C++ runtime's Python binding, ``dtorch.runtime._C`` (everything else is in pyproject.toml).

The extension compiles the runtime core, the portable kernels and the pybind11 module from ``runtime/`` (the
groups of runtime/sources.json, read through dtorch/edge/sources.py) with the runtime's flags (C++17, -Wall
-Wextra -Werror, -ffp-contract=off, never -ffast-math). The ISA kernel sets built for this machine's
architecture (runtime/kernels/*/kernel_set.json, read through dtorch/edge/kernel_sets.py: on x86-64 the AVX2
and AVX-512 sets) are added, each file compiled with its set's flags on top of those; every other file keeps
the baseline ISA, and each set's kernels register themselves only on CPUs that have its ISA.
``pip install -e .`` builds it in place; set ``DTORCH_BUILD_JOBS`` to choose the number of parallel
compile jobs (default: the number of CPUs).
"""

from __future__ import annotations

import os
import shutil

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_light(name: str):  # a light dtorch/edge module, by path: dtorch is not importable while it is being built
    """dtorch/edge/<name>.py (and the light modules it imports relatively) under a stand-in package, so that
    neither dtorch nor dtorch.edge is imported."""
    import importlib
    import sys
    import types

    pkg = types.ModuleType("_dtorch_edge_light")
    pkg.__path__ = [os.path.join(ROOT, "dtorch", "edge")]
    sys.modules.setdefault(pkg.__name__, pkg)
    return importlib.import_module(f"{pkg.__name__}.{name}")


_src, _ks = _load_light("sources"), _load_light("kernel_sets")
SOURCES = _src.load_sources(os.path.join(ROOT, "runtime"))
_HOST_SETS = SOURCES.kernel_sets(_ks.host_arch())
# Per-directory ISA flags of the kernel sets built for this machine (runtime/kernels/*/kernel_set.json).
ISA_FLAGS = {os.path.relpath(ks.folder, ROOT).replace(os.sep, "/") + "/": list(ks.flags) for ks in _HOST_SETS}


def _sources() -> list[str]:
    """The runtime, the pybind11 module, then the host's ISA kernel sets (linked last): runtime/sources.json's
    groups, the list SConstruct and the board build plan pick from too."""
    return [os.path.join("runtime", rel) for rel in SOURCES.files(*_src.RUNTIME, "python", "isa", arch=_ks.host_arch())]


ext = Pybind11Extension(
    "dtorch.runtime._C",
    sources=_sources(),
    include_dirs=["runtime/include", "runtime", "runtime/schema", "/usr/include"],
    cxx_std=17,
    define_macros=[("DTORCH_VERIFY_PLAN", "1")],
    extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra", "-Werror"],
    language="c++",
)



class RuntimeBuildExt(build_ext):  # type: ignore[misc]
    """Compile with the runtime's own flags only: drop Python's -O3/-g/-fwrapv so the extension is built
    like `scons` builds dtorch-run (same optimizer, same warnings)."""

    _DROP = {"-O3", "-O2", "-O1", "-g", "-fwrapv", "-Wsign-compare"}

    def build_extensions(self) -> None:
        for attr in ("compiler_so", "compiler_so_cxx", "compiler_cxx", "compiler"):
            flags = getattr(self.compiler, attr, None)
            if isinstance(flags, list):
                setattr(self.compiler, attr, [f for f in flags if f not in self._DROP])
        # Per-file flags: only the x86-64 kernel sets are compiled with their ISA extensions.
        compile_one = self.compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):  # type: ignore[no-untyped-def]
            rel = os.path.relpath(os.path.abspath(src), ROOT).replace(os.sep, "/")
            for folder, flags in ISA_FLAGS.items():
                if rel.startswith(folder):
                    extra_postargs = list(extra_postargs) + flags
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


# The edge SDK's non-Python folders travel inside the wheel as dtorch/_share/ (dtorch/edge/resources.py finds them
# there when dtorch is not imported from a source checkout), so an installed `dtorch-edge build` can compile the
# runtime for a board: the runtime's sources, the board files, the toolchain modules, the emulator profiles and
# the SConstruct that builds them.
SHARE_DIRS = ("runtime", "boards", "toolchains", "emulation")
SHARE_FILES = ("SConstruct",)
SHARE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.o", "*.so", ".sconsign*", "crashes")


class BuildPyWithShare(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        share = os.path.join(self.build_lib, "dtorch", "_share")
        if os.path.isdir(share):
            shutil.rmtree(share)
        os.makedirs(share)
        for name in SHARE_DIRS:
            src = os.path.join(ROOT, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(share, name), ignore=SHARE_IGNORE)
        for name in SHARE_FILES:
            shutil.copy2(os.path.join(ROOT, name), os.path.join(share, name))


ParallelCompile("DTORCH_BUILD_JOBS", default=0).install()

setup(ext_modules=[ext], cmdclass={"build_ext": RuntimeBuildExt, "build_py": BuildPyWithShare})
