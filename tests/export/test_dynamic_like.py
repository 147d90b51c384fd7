"""Targets that follow a dynamic dimension without being an input dim at their position: a constant expanded to
the batch (a class token), a reshape whose two entries change. They are read at run time from the dims of an
earlier tensor (reshape/expand's `like` input, runtime/OPS.md), so the exported model runs at every batch."""

from __future__ import annotations

import numpy as np
import pytest

import dtorch as dt
import dtorch.nn as nn
from dtorch._export.reader import read_dtm
from dtorch.runtime import InferenceSession


class ClassToken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cls = nn.Parameter(dt.randn(1, 1, 4))
        self.proj = nn.Linear(4, 4)

    def forward(self, x):  # x: (batch, seq, 4)
        tok = self.cls.expand(x.shape[0], -1, -1)
        y = dt.cat([tok, self.proj(x)], dim=1)
        return y.reshape(x.shape[0] * (x.shape[1] + 1), 4)  # both entries change with batch and seq


def test_constant_expanded_to_the_batch_runs_at_every_size(tmp_path):
    m = ClassToken().eval()
    x = dt.randn(2, 3, 4)
    path = tmp_path / "m.dtm"
    dt.export(m, (x,), path, dynamic_axes={"input": {0: "batch", 1: "seq"}})
    f = read_dtm(path)
    expand = next(n for n in f.nodes if n.op == "expand")
    assert len(expand.inputs) == 2 and expand.attrs["like_dims"][0] == 0
    sess = InferenceSession(str(path))
    for b, s in ((1, 1), (3, 5), (8, 2)):
        xb = dt.randn(b, s, 4)
        got = sess.run(None, {"input": xb.numpy()})[0]
        np.testing.assert_allclose(got, m(xb).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_onnx_export_reads_the_target_from_shape(tmp_path):
    pytest.importorskip("onnx", reason="dtorch.onnx.export needs onnx")
    ort = pytest.importorskip("onnxruntime", reason="the check runs the file in ONNX Runtime")
    import dtorch.onnx

    m = ClassToken().eval()
    dtorch.onnx.export(m, (dt.randn(2, 3, 4),), tmp_path / "m.onnx", input_names=["input"],
                       dynamic_axes={"input": {0: "batch", 1: "seq"}})
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    xb = dt.randn(3, 5, 4)
    np.testing.assert_allclose(sess.run(None, {"input": xb.numpy()})[0], m(xb).detach().numpy(), rtol=1e-5, atol=1e-6)
