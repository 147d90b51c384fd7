"""A model path that is not a regular file (a FIFO, a device, a directory, a link to /dev/zero) is refused at once
with one line by every entry point, instead of blocking forever or reading without end (issue 13)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import dtorch.runtime as rt
from dtorch._export.errors import DtmFormatError
from dtorch._export.reader import read_dtm
from dtorch.edge.cli import main as edge_main


@pytest.fixture(params=["fifo", "dev-zero-link", "directory"])
def not_a_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    p = tmp_path / "model.dtm"
    if request.param == "fifo":
        os.mkfifo(p)  # nobody ever writes: opening it for reading the usual way blocks forever
        return p, "FIFO"
    if request.param == "dev-zero-link":
        p.symlink_to("/dev/zero")
        return p, "device"
    p.mkdir()
    return p, "directory"


def test_inference_session_refuses(not_a_file: tuple[Path, str]) -> None:
    p, kind = not_a_file
    with pytest.raises(OSError, match=kind) as e:
        rt.InferenceSession(str(p))
    assert "\n" not in str(e.value)


def test_reader_and_inspect_refuse(not_a_file: tuple[Path, str]) -> None:
    p, kind = not_a_file
    with pytest.raises(DtmFormatError, match=kind):
        read_dtm(p)
    res = CliRunner().invoke(edge_main, ["inspect", str(p)])
    if kind == "directory":  # click's own check of the argument: a usage error
        assert res.exit_code == 2 and "is a directory" in res.output, res.output
        return
    assert res.exit_code == 1 and kind in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_dtorch_run_refuses(not_a_file: tuple[Path, str], dtorch_run: Path) -> None:
    p, kind = not_a_file
    r = subprocess.run([str(dtorch_run), str(p), "--info"], capture_output=True, text=True, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert 0 < r.returncode < 128 and len(lines) == 1 and kind in lines[0], r.stderr
