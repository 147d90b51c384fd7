"""dt.export lowers comparisons, where, casts, amax/amin and pad's reflect/replicate/circular modes to their operators,
and the runtime gives the eager result: bool and int64 tensors inside the graph, at its inputs and at its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch._export import ExportError, read_dtm

rt = pytest.importorskip("dtorch.runtime")


class Masked(nn.Module):
    """eq / where / amax / reflect pad around a conv: the mix the ONNX importer meets in real graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        y = self.conv(F.pad(x, (1, 1, 2, 1), mode="reflect"))
        peak = dt.amax(y, dim=(2, 3), keepdim=True)
        at_peak = dt.eq(y, peak)
        return dt.where(at_peak, y, dt.zeros(1)) + dt.amin(y, dim=1, keepdim=True)


class Everything(nn.Module):
    def forward(self, x: dt.Tensor, idx: dt.Tensor) -> tuple[dt.Tensor, ...]:
        pos = x > 0.0
        small = dt.lt(x, 0.5)
        band = (x >= -0.25) & (x <= 0.25)  # ge, le and logical_and: composed of less/greater/equal and where
        ne = x != 0.5
        count = (pos | small).long()  # logical_or, then a cast bool -> int64
        picked = dt.where(band ^ ne, x, -x)
        edge = F.pad(x.reshape(1, 2, 6), (2, 3), mode="replicate") + F.pad(x.reshape(1, 2, 6), (3, 2), mode="circular")
        as_int = (x * 10).int()  # float32 -> int32: truncation toward zero
        return picked, count, edge, as_int.float() + idx.float(), dt.amax(x, dim=0), x.max()


def _run(path: Path, *xs: np.ndarray) -> list[np.ndarray]:
    s = rt.InferenceSession(str(path))
    return s.run(None, {i.name: x for i, x in zip(s.get_inputs(), xs)})


def test_masked_model_runs_as_eager(tmp_path: Path) -> None:
    dt.manual_seed(0)
    m = Masked().eval()
    x = dt.randn(2, 3, 8, 9)
    path = tmp_path / "masked.dtm"
    dt.export(m, x, path)
    ops = {n.op for n in read_dtm(path).nodes}
    assert {"pad", "amax", "amin", "equal", "where", "conv2d"} <= ops, ops
    pads = [n.attrs for n in read_dtm(path).nodes if n.op == "pad"]
    assert pads == [{"pads": [1, 1, 2, 1], "mode": "reflect", "value": 0.0}]
    with dt.no_grad():
        want = m(x).numpy()
    got = _run(path, x.numpy())[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    x2 = dt.randn(2, 3, 8, 9)  # another input: the mask is computed at run time, not baked in
    with dt.no_grad():
        np.testing.assert_allclose(_run(path, x2.numpy())[0], m(x2).numpy(), rtol=1e-5, atol=1e-5)


def test_comparisons_casts_and_pad_modes_run_as_eager(tmp_path: Path) -> None:
    m = Everything()
    x = dt.tensor(np.array([[0.5, -0.25, 0.25, 0.0, 3.0, -7.5], [0.1, -0.1, 0.49, 0.51, -0.99, 2.26]], np.float32))
    idx = dt.tensor(np.array([3, -2, 0, 1, 5, 9], np.int64))
    path = tmp_path / "all.dtm"
    dt.export(m, (x, idx), path)
    g = read_dtm(path)
    ops = {n.op for n in g.nodes}
    assert {"greater", "less", "equal", "where", "cast", "pad", "amax"} <= ops, ops
    assert {n.attrs["to"] for n in g.nodes if n.op == "cast"} == {"int64", "int32", "float32"}
    want = [o.numpy() for o in m(x, idx)]
    got = _run(path, x.numpy(), idx.numpy())
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    x2 = dt.tensor(np.random.default_rng(3).standard_normal((2, 6)).astype(np.float32))
    for a, b in zip(_run(path, x2.numpy(), idx.numpy()), [o.numpy() for o in m(x2, idx)]):
        np.testing.assert_array_equal(a, b)


def test_bool_input_and_output(tmp_path: Path) -> None:
    class Gate(nn.Module):
        def forward(self, x: dt.Tensor, keep: dt.Tensor) -> tuple[dt.Tensor, dt.Tensor]:
            return dt.where(keep, x, x * 2.0), keep & (x > 0)

    x, keep = dt.randn(3, 4), dt.tensor(np.random.default_rng(4).random((3, 4)) < 0.5)
    path = tmp_path / "gate.dtm"
    dt.export(Gate(), (x, keep), path)
    got = _run(path, x.numpy(), keep.numpy())
    want = [o.numpy() for o in Gate()(x, keep)]
    assert got[1].dtype == np.bool_
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_what_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"a cast from float32 to float64 of a traced tensor; the .dtm cast converts "
                                          r"between float32, int64, int32, bool only"):
        dt.export(_Lambda(lambda x: x.double()), dt.randn(2, 4), tmp_path / "m.dtm")
    with pytest.raises(ExportError, match=r"logical_and of float32 tensors"):
        dt.export(_Lambda(lambda x: dt.logical_and(x, x)), dt.randn(2, 4), tmp_path / "m.dtm")


class _Lambda(nn.Module):
    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return self.fn(x)
