"""Careless inputs on the Python side get one clear line, and what dtorch writes is reproducible and leaves no
debris (issue 13): paths that are not regular files, malformed or deeply nested checkpoints, ops.yaml bombs,
temporary files of killed writers, and dt.save's bytes from run to run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dtorch as dt
from dtorch._fileio import NotRegularFileError, read_regular, write_atomic
from dtorch.edge.oplist import OpList, OpListError
from dtorch.serialization import CheckpointError


def _safetensors(header: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header


def test_read_regular_refuses_a_fifo_at_once_and_bounds_size(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="FIFO"):
        read_regular(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    with pytest.raises(NotRegularFileError, match="100 bytes, more than the 10"):
        read_regular(big, limit=10)
    assert read_regular(big) == b"x" * 100


def test_load_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="FIFO"):
        dt.load(fifo)


@pytest.mark.parametrize("header", [b"[1, 2]", b'"text"', b"42", b'{"__metadata__": [1]}'],
                         ids=["list", "string", "number", "metadata-list"])
def test_a_header_that_is_not_an_object_is_a_checkpoint_error(tmp_path: Path, header: bytes) -> None:
    p = tmp_path / "bad.safetensors"
    p.write_bytes(_safetensors(header))
    with pytest.raises(CheckpointError, match="not an object") as e:
        dt.load(p)
    assert "\n" not in str(e.value)


def test_deep_nesting_is_a_checkpoint_error(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    p = tmp_path / "deep.safetensors"
    p.write_bytes(_safetensors(b'{"x": ' + deep + b"}"))
    with pytest.raises(CheckpointError):
        dt.load(p)
    # a deeply nested structure record in a valid file
    good = tmp_path / "good.safetensors"
    dt.save({"a": 1}, good)
    data = good.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["dtorch.structure"] = "[" * 50_000 + "]" * 50_000
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    good.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + n:])
    with pytest.raises(CheckpointError, match="structure record is damaged") as e:
        dt.load(good)
    assert "\n" not in str(e.value) and len(str(e.value)) < 500


def test_save_is_byte_reproducible_across_processes(tmp_path: Path) -> None:
    code = ("import dtorch as dt, sys; dt.manual_seed(0); "
            "dt.save({'w': dt.randn(3, 2), 'step': 7, 'cfg': {'lr': 0.1, 'name': 'x', 'ids': [1, 2]}}, sys.argv[1])")
    outs = []
    for i in range(3):
        p = tmp_path / f"c{i}.safetensors"
        subprocess.run([sys.executable, "-c", code, str(p)], check=True, timeout=120)
        outs.append(p.read_bytes())
    assert outs[0] == outs[1] == outs[2]
    assert dt.load(tmp_path / "c0.safetensors")["cfg"] == {"lr": 0.1, "name": "x", "ids": [1, 2]}


def test_ops_yaml_nesting_and_alias_bombs_are_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("conv2d: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(OpListError, match="nests deeper than 32 levels") as e:
        OpList.from_yaml(deep)
    assert "\n" not in str(e.value)
    lines = ["a: &a [float32, float32, float32, float32, float32, float32, float32, float32, float32]"]
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(OpListError, match="more than 16 YAML aliases") as e:
        OpList.from_yaml(bomb)
    assert len(str(e.value)) < 300
    big = tmp_path / "big.yaml"
    big.write_text("conv2d: [float32]\n" + "# padding\n" * 200_000)
    with pytest.raises(OpListError, match="more than the"):
        OpList.from_yaml(big)


def test_write_atomic_removes_temp_files_of_dead_writers_only(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stale = tmp_path / f".model.dtm.{dead}.k2j4h5g6.tmp"
    live = tmp_path / f".model.dtm.{os.getppid()}.a1b2c3d4.tmp"  # our parent is alive: another writer's file
    other = tmp_path / f".other.dtm.{dead}.a1b2c3d4.tmp"         # another target: not ours to clean
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    write_atomic(tmp_path / "model.dtm", b"new")
    assert (tmp_path / "model.dtm").read_bytes() == b"new"
    assert not stale.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "model.dtm"])
