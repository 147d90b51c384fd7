"""Build of the C++ runtime's Python binding, ``dtorch.runtime._C`` (everything else is in pyproject.toml).

The extension compiles the runtime core, the portable kernels and the pybind11 module from ``runtime/``
with the runtime's flags (C++17, -Wall -Wextra -Werror, -ffp-contract=off, never -ffast-math). On x86-64 the
x86 kernel set (runtime/kernels/x86/*.cc) is added, each of its files compiled with -mavx2 -mfma on top of those
flags (and linked after the portable files); every other file keeps the baseline ISA, and the x86 kernels
register themselves only on CPUs with AVX2 and FMA.
``pip install -e .`` builds it in place; set ``DTORCH_BUILD_JOBS`` to choose the number of parallel
compile jobs (default: the number of CPUs).
"""

from __future__ import annotations

import os
import platform
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ROOT = os.path.dirname(os.path.abspath(__file__))


X86_DIR = "runtime/kernels/x86/"
X86_FLAGS = ["-mavx2", "-mfma"]


def _is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _sources() -> list[str]:
    patterns = ["runtime/core/*.cc", "runtime/kernels/common/*.cc", "runtime/kernels/portable/*.cc",
                "runtime/python/module.cc"]
    if _is_x86_64():
        patterns.append(X86_DIR + "*.cc")  # last: see runtime/kernels/x86/x86.h (link order)
    found: list[str] = []
    for pattern in patterns:
        found += sorted(os.path.relpath(p, ROOT) for p in glob(os.path.join(ROOT, pattern)))
    return found


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
        # Per-file flags: only the x86 kernel set is compiled with AVX2 + FMA.
        compile_one = self.compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):  # type: ignore[no-untyped-def]
            if os.path.relpath(os.path.abspath(src), ROOT).replace(os.sep, "/").startswith(X86_DIR):
                extra_postargs = list(extra_postargs) + X86_FLAGS
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


ParallelCompile("DTORCH_BUILD_JOBS", default=0).install()

setup(ext_modules=[ext], cmdclass={"build_ext": RuntimeBuildExt})
