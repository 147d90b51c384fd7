"""Builds the instruction-counting TCG plugin (emulation/qemu/insn_count.c) with the host C compiler into
build/plugins/insn_count.so, once: a later call reuses it while it is newer than its source."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import RunnerUnavailable

__all__ = ["build_plugin"]


def build_plugin(root: str | os.PathLike[str] | None = None) -> Path:
    from ..resources import resource_root

    base = Path(root) if root is not None else resource_root()
    src = base / "emulation" / "qemu" / "insn_count.c"
    out = base / "build" / "plugins" / "insn_count.so"
    if out.is_file() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RunnerUnavailable("no host C compiler to build the instruction-count plugin: apt-get install gcc")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as d:
        tmp = Path(d) / out.name
        r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wall", "-Werror", str(src),
                            "-o", str(tmp)], capture_output=True, text=True)
        if r.returncode != 0:
            first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:300])
            raise RunnerUnavailable(f"building the instruction-count plugin failed: {first}")
        os.replace(tmp, out)
    return out
