"""The wheel carries the edge SDK's data (DESIGN.md "Layout"): setup.py's build_py copies runtime/, boards/,
toolchains/, emulation/ and SConstruct into dtorch/_share/, where dtorch.edge.resources finds them when dtorch is
not imported from a source checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def build_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build_lib")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


def test_build_py_copies_the_sdk_folders(build_lib: Path) -> None:
    share = build_lib / "dtorch" / "_share"
    for rel in ("SConstruct", "runtime/include/dtorch/runtime.h", "runtime/hosted/executor.cc",
                "runtime/kernels/portable/conv2d.cc", "runtime/apps/dtorch_run.cc", "runtime/schema/dtm_generated.h"):
        assert (share / rel).is_file(), rel
    for folder in ("boards", "toolchains", "emulation"):
        if (ROOT / folder).is_dir():
            src = sorted(p.relative_to(ROOT / folder) for p in (ROOT / folder).rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts)
            got = sorted(p.relative_to(share / folder) for p in (share / folder).rglob("*") if p.is_file())
            assert got == src, folder
    assert not list(share.rglob("*.o")) and not list(share.rglob("__pycache__"))
    assert not (share / "runtime" / "fuzz" / "crashes").exists()


def test_resources_found_in_an_installed_layout(build_lib: Path) -> None:
    if not (ROOT / "boards").is_dir():
        pytest.skip("boards/ does not exist yet")
    from dtorch.edge.resources import resource_root

    pkg = build_lib / "dtorch"
    assert resource_root(pkg) == (pkg / "_share").resolve()
    assert resource_root() == ROOT  # imported from this checkout


def test_missing_sdk_data_is_a_clear_error(tmp_path: Path) -> None:
    from dtorch.edge.resources import ResourceError, resource_root

    (tmp_path / "dtorch").mkdir()
    with pytest.raises(ResourceError, match="cannot find the DTorch edge SDK data"):
        resource_root(tmp_path / "dtorch")
