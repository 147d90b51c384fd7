"""Every error a user can cause in dt.export, the reader and `dtorch-edge inspect` has a clear message."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch._export import DtmFormatError, ExportError, read_dtm
from dtorch._export import writer as W
from dtorch.edge.cli import main

DYN = {"input": {0: "batch"}, "output": {0: "batch"}}


class Wrap(nn.Module):
    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return self.fn(x)




class Model(nn.Module):
    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), Wrap(fn))

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return self.body(x)


def test_unexportable_op_names_op_path_and_list(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as e:
        dt.export(Model(F.mish), dt.randn(2, 4), tmp_path / "m.dtm")
    msg = str(e.value)
    assert "'mish'" in msg and "'body.1'" in msg and "conv2d" in msg and "softmax" in msg
    assert not (tmp_path / "m.dtm").exists()
    with pytest.raises(ExportError, match=r"'max_dim'.*'body.1'"):
        dt.export(Model(lambda x: x.max(dim=1).values), dt.randn(2, 4), tmp_path / "m.dtm")


@pytest.mark.parametrize("read", [lambda x: bool(x.sum() > 0), lambda x: x.sum().item(), lambda x: x.tolist(),
                                  lambda x: x.numpy(), lambda x: float(x.sum()), lambda x: int(x.sum())])
def test_data_dependent_control_flow(tmp_path: Path, read) -> None:  # type: ignore[no-untyped-def]
    def fn(x: dt.Tensor) -> dt.Tensor:
        read(x)
        return x.relu()

    with pytest.raises(ExportError, match=r"data-dependent Python control flow at 'body.1'"):
        dt.export(Model(fn), dt.randn(2, 4), tmp_path / "m.dtm")
    assert not list(tmp_path.iterdir())


def test_reading_constants_is_fine(tmp_path: Path) -> None:
    m = Model(lambda x: x * 2 if float(dt.ones(1).sum()) > 0 else x)
    dt.export(m, dt.randn(2, 4), tmp_path / "m.dtm")


def test_shape_dependent_branch_found_by_second_trace(tmp_path: Path) -> None:
    m = Model(lambda x: x.relu() if x.shape[0] == 1 else x.sigmoid())
    dt.export(m, dt.randn(1, 4), tmp_path / "static.dtm")  # fine without dynamic axes
    with pytest.raises(ExportError, match=r"diverge at operator 'relu' in 'body.1'.*dynamic_axes"):
        dt.export(m, dt.randn(1, 4), tmp_path / "m.dtm", dynamic_axes=DYN)
    assert not (tmp_path / "m.dtm").exists()


def test_constant_built_from_dynamic_shape(tmp_path: Path) -> None:
    m = Model(lambda x: x + dt.ones(x.shape[0], 4))
    with pytest.raises(ExportError, match=r"constant .*'body.1'.* changes"):
        dt.export(m, dt.randn(2, 4), tmp_path / "m.dtm", dynamic_axes=DYN)


def test_symbolic_reshape(tmp_path: Path) -> None:
    m = Model(lambda x: x.reshape(x.shape[0] * 2, 2).relu().reshape(x.shape[0], 4))
    dt.export(m, dt.randn(3, 4), tmp_path / "m.dtm", dynamic_axes=DYN)
    shapes = [n.attrs["shape"] for n in read_dtm(tmp_path / "m.dtm").nodes if n.op == "reshape"]
    assert shapes == [[-1, 2], [-1, 4]]


@pytest.mark.parametrize("axes, match", [
    ({"inp": {0: "batch"}}, r"'inp', which is neither an input nor an output name"),
    ({"input": {5: "batch"}}, r"names dimension 5, but 'input' has 2 dimension"),
    ({"input": {0: ""}}, r"must be a non-empty name"),
    ({"output": {0: "batch"}}, r"only output dimensions"),
    ({"input": {1: "feat"}}, r"failed when traced again"),
    ({"input": {0: "batch"}, "output": {1: "batch"}}, r"dimension 1 of output 'output'.*does not change"),
    ([("input", 0)], r"must be a dict"),
])
def test_bad_dynamic_axes(tmp_path: Path, axes, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ExportError, match=match):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm", dynamic_axes=axes)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, match", [
    (np.zeros((2, 4), np.float32), r"must be a dtorch.Tensor .* numpy|dt.from_numpy"),
    ([1, 2], r"item 0 is a int"),
    ((), r"at least one example input"),
    (dt.randn(2, 4).double(), r"dtype dtorch.float64|float64"),
])
def test_wrong_example_input(tmp_path: Path, args, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ExportError, match=match):
        dt.export(Model(lambda x: x), args, tmp_path / "m.dtm")


def test_bad_names_and_opset(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="output_names has 2 name"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm", output_names=["a", "b"])
    with pytest.raises(ExportError, match="input_names has 2 name"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm", input_names=["a", "b"])
    with pytest.raises(ExportError, match="opset 12 is not supported"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm", opset=12)
    with pytest.raises(ExportError, match="does not depend on its inputs"):
        dt.export(Model(lambda x: dt.ones(2)), dt.randn(2, 4), tmp_path / "m.dtm")


def test_unwritable_path_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ExportError, match="does not exist"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "missing" / "m.dtm")
    with pytest.raises(ExportError, match="is a directory"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path)

    def boom(*a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ExportError, match="No space left"):
        dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm")
    assert not list(tmp_path.iterdir())


def test_reader_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DtmFormatError, match="not found"):
        read_dtm(tmp_path / "none.dtm")
    (tmp_path / "junk.dtm").write_bytes(b"hello world, not a model")
    with pytest.raises(DtmFormatError, match="not a .dtm model file"):
        read_dtm(tmp_path / "junk.dtm")
    dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "m.dtm")
    data = (tmp_path / "m.dtm").read_bytes()
    (tmp_path / "t.dtm").write_bytes(data[:120])
    with pytest.raises(DtmFormatError, match="corrupt or truncated|outside"):
        read_dtm(tmp_path / "t.dtm")
    monkeypatch.setattr(W, "FORMAT_VERSION", 2)
    dt.export(Model(lambda x: x), dt.randn(2, 4), tmp_path / "new.dtm")
    with pytest.raises(DtmFormatError, match=r"format version 2, newer than this dtorch reads \(1\)"):
        read_dtm(tmp_path / "new.dtm")


def test_inspect_cli(tmp_path: Path) -> None:
    dt.export(Model(lambda x: x.relu()), dt.randn(2, 4), tmp_path / "m.dtm", dynamic_axes=DYN)
    r = CliRunner().invoke(main, ["inspect", str(tmp_path / "m.dtm")])
    assert r.exit_code == 0, r.output
    assert "linear +relu" in r.output and "input[batchx4]:float32" in r.output and "arena" in r.output
    assert "@ body.0" in r.output and "parameters: 80 bytes" in r.output
    r = CliRunner().invoke(main, ["inspect", str(tmp_path / "m.dtm"), "--json"])
    assert r.exit_code == 0 and '"activation": "relu"' in r.output
    (tmp_path / "bad.dtm").write_bytes(b"\0" * 10)
    for f in ("bad.dtm", "missing.dtm"):
        r = CliRunner().invoke(main, ["inspect", str(tmp_path / f)])
        assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and r.output.startswith("error:")
