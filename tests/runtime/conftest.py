"""Fixtures for the runtime tests; puts this folder on sys.path so tests can `import dtm_builder`
(the hand-written .dtm builder, independent of the exporter)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from dtm_builder import relu_model  # noqa: E402


@pytest.fixture
def relu_dtm(tmp_path: Path) -> str:
    path = tmp_path / "relu.dtm"
    path.write_bytes(relu_model().build())
    return str(path)


@pytest.fixture(scope="session")
def dtorch_run() -> Path:
    """build/host/dtorch-run, built (incrementally) with scons."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if shutil.which("scons") is None:
        pytest.skip("scons is not installed (bash scripts/setup.sh installs it)")
    r = subprocess.run(["scons", "-Q", "-j2", "dtorch-run"], cwd=root, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return root / "build" / "host" / "dtorch-run"
