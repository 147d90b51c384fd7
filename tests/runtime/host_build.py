"""Builds host targets of the runtime (``scons <target>`` into build/host/) for the tests that run them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "host"


def scons_host(*targets: str, timeout: int = 900) -> Path:
    """build/host/ after building `targets`; fails (never skips) when scons is missing: the setup installs it."""
    if shutil.which("scons") is None:
        pytest.fail("scons is not installed: run scripts/setup.sh (it installs the apt packages the runtime needs)")
    r = subprocess.run(["scons", "-Q", "-j2", *targets], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return BUILD
