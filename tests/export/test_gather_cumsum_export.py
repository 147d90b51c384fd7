"""dt.export lowers torch.gather to gather_elements and torch.cumsum to cumsum (integer and bool inputs summed in int64,
as eager does), and the runtime gives the eager result at other sizes of a dynamic dimension; sort, whose order eager
computes outside the traced operators, is refused instead of baking the example's order into a constant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
from dtorch import nn
from dtorch._export import ExportError, read_dtm

rt = pytest.importorskip("dtorch.runtime")


class PositionIds(nn.Module):
    """RoBERTa's position ids from an attention mask (cumsum(mask, 1) * mask + 1), a gather along the sequence, and
    the running sums of float, int32 and bool tensors."""

    def forward(self, x: dt.Tensor, mask: dt.Tensor, idx: dt.Tensor) -> tuple[dt.Tensor, ...]:
        pos = dt.cumsum(mask, 1) * mask + 1
        picked = x.gather(1, idx)
        return pos, picked, dt.cumsum(x, 1), dt.cumsum(mask.int(), 0), dt.cumsum(mask > 0, 1)


def _inputs(rng: np.random.Generator, seq: int) -> tuple[dt.Tensor, ...]:
    return (dt.from_numpy(rng.standard_normal((2, seq)).astype(np.float32)),
            dt.from_numpy(rng.integers(0, 2, (2, seq))), dt.from_numpy(rng.integers(-seq, seq, (2, seq))))


def test_gather_and_cumsum_run_as_eager(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "pos.dtm"
    dyn = {"input0": {1: "seq"}, "input1": {1: "seq"}, "input2": {1: "seq"}}
    dt.export(PositionIds(), _inputs(rng, 7), path, dynamic_axes=dyn)
    nodes = read_dtm(path).nodes
    assert {"gather_elements", "cumsum"} <= {n.op for n in nodes}
    assert [n.attrs for n in nodes if n.op == "gather_elements"] == [{"axis": 1}]
    s = rt.InferenceSession(str(path))
    for seq in (7, 1, 12):
        xs = _inputs(rng, seq)
        got = s.run(None, {i.name: x.numpy() for i, x in zip(s.get_inputs(), xs)})
        for g, w in zip(got, PositionIds()(*xs)):
            want = w.numpy()
            assert g.dtype == want.dtype and g.shape == want.shape
            np.testing.assert_array_equal(g, want)  # float32 cumsum: eager's sequential float32 sums, exactly


def test_gather_with_a_smaller_index_is_torch_gather(tmp_path: Path) -> None:
    """torch.gather takes an index smaller than the input in the other dims (eager no longer broadcasts it)."""
    torch = pytest.importorskip("torch")
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    idx = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
    eager = dt.gather(dt.from_numpy(x), 0, dt.from_numpy(idx)).numpy()
    np.testing.assert_array_equal(eager, torch.gather(torch.from_numpy(x), 0, torch.from_numpy(idx)).numpy())
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 1 expected index \[2, 6\] to be no larger "
                                           r"than self \[3, 5\] apart from dimension 0"):
        dt.gather(dt.from_numpy(x), 0, dt.zeros(2, 6, dtype=dt.int64))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        dt.gather(dt.from_numpy(x), 0, dt.zeros(2, dtype=dt.int64))

    class M(nn.Module):
        def forward(self, i: dt.Tensor) -> dt.Tensor:
            return dt.gather(dt.from_numpy(x), 0, i)

    path = tmp_path / "g.dtm"
    dt.export(M(), dt.from_numpy(idx), path)
    got = rt.InferenceSession(str(path)).run(None, {"input": idx[::-1].copy()})[0]
    np.testing.assert_array_equal(got, M()(dt.from_numpy(idx[::-1].copy())).numpy())


def test_sort_is_refused(tmp_path: Path) -> None:
    class Sorted(nn.Module):
        def forward(self, x: dt.Tensor) -> dt.Tensor:
            return dt.sort(x, 1).values

    with pytest.raises(ExportError, match=r"sort\(\) \(also argsort\(\) and topk\(\)\) reads the value of a traced "
                                          r"tensor"):
        dt.export(Sorted(), dt.randn(2, 3), tmp_path / "s.dtm")
    assert not (tmp_path / "s.dtm").exists()
