"""An int8 model out as ONNX and back (dtorch.onnx.export's QDQ form, dtorch/onnx/_qdq.py's fusion).

- A model quantized by dt.quant.quantize (convolutions with ReLU / ReLU6, a depthwise one, a residual add, max
  pooling, token linear layers on 3-D input, a mean, a classifier) exports as QDQ ONNX at opsets 13, 17 and 21: it
  passes onnx.checker's full check and ONNX Runtime runs it within MAX_STEPS output steps of DTorch (ONE_STEP_SHARE
  of the values within one step), with the same top-1, at batch 1 and 3 (the batch stays dynamic).
- Round trip: that file imported by dtorch.onnx.import_model runs the same int8 operators, bit for bit.
- An int8 `.dtm` (dt.export of the int8 model) exports the same way from its path.
- Errors: dynamic_axes or wrong names for a built model, a model that is neither a module, an int8 model nor a path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx_cases import ort_run  # noqa: E402

import dtorch as dt  # noqa: E402
import dtorch.nn.functional as F  # noqa: E402
import dtorch.onnx  # noqa: E402
from dtorch import nn  # noqa: E402
from dtorch._export.errors import ExportError  # noqa: E402
from dtorch.runtime import InferenceSession  # noqa: E402

MAX_STEPS = 2
ONE_STEP_SHARE = 0.99
INT8_OPS = {"quantize", "dequantize", "qconv2d", "qlinear", "qadd", "qmean"}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.tok = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        a = F.relu(self.conv1(x))
        b = self.pw(F.relu6(self.dw(a))) + a
        c = self.conv2(F.max_pool2d(b, 2))  # (N, 16, 4, 4)
        t = F.relu(self.tok(c.flatten(2).transpose(1, 2)))  # tokens (N, 16, 16)
        return self.fc(t.mean(1))


def _images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def qmodel() -> dt.quant.QuantizedModel:
    dt.manual_seed(0)
    model = Net().eval()
    q = dt.quant.quantize(model, [_images(8, 100 + i) for i in range(4)])
    ops = {n.op for n in q.graph.nodes}
    assert {"qconv2d", "qlinear", "qadd", "qmean", "max_pool2d"} <= ops and not {"conv2d", "linear", "add"} & ops, ops
    return q


def _output_scale(q: dt.quant.QuantizedModel) -> float:
    out = q.graph.outputs[0]
    dq = next(n for n in q.graph.nodes if n.outputs[0] is out)
    assert dq.op == "dequantize"
    return float(dq.attrs["scale"])


def _check_ort(q: dt.quant.QuantizedModel, path: Path) -> dict[str, float]:
    stats = {}
    for batch in (1, 3, 32):
        x = _images(batch, batch)
        got = ort_run(path, {"input": x})[0]
        ref = q.run(x)[0]
        steps = np.rint(np.abs(got.astype(np.float64) - ref) / _output_scale(q))
        assert steps.max() <= MAX_STEPS and float(np.mean(steps <= 1)) >= ONE_STEP_SHARE, (batch, steps.max())
        assert float(np.mean(got.argmax(1) == ref.argmax(1))) >= 0.96 if batch == 32 else True
        stats = {"max_steps": float(steps.max()), "equal": float(np.mean(steps == 0))}
    return stats


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_int8_model_exports_as_qdq_that_onnx_runtime_runs(qmodel, opset: int, tmp_path: Path) -> None:
    path = tmp_path / "q.onnx"
    rep = dtorch.onnx.export(qmodel, None, path, opset_version=opset)
    m = onnx.load(str(path))
    onnx.checker.check_model(m, full_check=True)
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "MatMul", "Add", "ReduceMean", "MaxPool"} <= \
        set(rep.op_types), rep.op_types
    assert set(rep.catalogue_ops) >= INT8_OPS
    assert rep.input_shapes["input"][0] == "batch"
    stats = _check_ort(qmodel, path)
    print(f"\nopset {opset}: ONNX Runtime vs DTorch int8: max {stats['max_steps']:.0f} output steps, "
          f"{stats['equal']:.4f} equal")


def _ops(graph) -> list[str]:
    return sorted(n.op for n in graph.nodes)


def test_round_trip_is_bit_exact(qmodel, tmp_path: Path) -> None:
    """DTorch int8 -> ONNX (QDQ) -> dtorch.onnx.import_model: the same int8 operators, the same bits."""
    path = tmp_path / "q.onnx"
    dtorch.onnx.export(qmodel, None, path)
    dtm = tmp_path / "back.dtm"
    report = dtorch.onnx.import_model(path, dtm)
    from dtorch._export.reader import read_dtm

    back, _, _ = read_dtm(dtm).to_graph()
    assert _ops(back) == _ops(qmodel.graph), report.quantization
    def int8_attrs(graph) -> list[str]:
        return sorted(f"{n.op} {sorted(n.attrs.items())}" for n in graph.nodes if n.op in INT8_OPS)

    assert int8_attrs(back) == int8_attrs(qmodel.graph)
    session = InferenceSession(str(dtm))
    for batch in (1, 3):
        x = _images(batch, 10 + batch)
        np.testing.assert_array_equal(session.run(None, {"input": x})[0], qmodel.run(x)[0])


def test_int8_dtm_file_exports_from_its_path(qmodel, tmp_path: Path) -> None:
    dtm = tmp_path / "q.dtm"
    dt.export(qmodel, dt.tensor(_images(1, 0)), dtm)
    path = tmp_path / "from_dtm.onnx"
    rep = dtorch.onnx.export(dtm, None, path, output_names=["logits"])
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    assert rep.output_names == ["logits"] and set(rep.catalogue_ops) >= INT8_OPS
    x = _images(4, 5)
    got = ort_run(path, {"input": x})[0]
    steps = np.rint(np.abs(got.astype(np.float64) - qmodel.run(x)[0]) / _output_scale(qmodel))
    assert steps.max() <= MAX_STEPS


def test_built_model_errors(qmodel, tmp_path: Path) -> None:
    path = tmp_path / "q.onnx"
    with pytest.raises(ExportError, match="dynamic_axes cannot change the dimensions of an int8 model"):
        dtorch.onnx.export(qmodel, None, path, dynamic_axes={"input": {0: "n"}})
    with pytest.raises(ExportError, match="an int8 model has 1 input"):
        dtorch.onnx.export(qmodel, None, path, input_names=["a", "b"])
    with pytest.raises(ExportError, match="model must be a dtorch.nn.Module .* or the path of a .dtm file, got int"):
        dtorch.onnx.export(3, None, path)
    with pytest.raises(ExportError, match="or the path of a .dtm file; '.*missing.dtm' is not a file"):
        dtorch.onnx.export(tmp_path / "missing.dtm", None, path)
    (tmp_path / "bad.dtm").write_bytes(b"not a model")
    with pytest.raises(ExportError, match="bad.dtm"):
        dtorch.onnx.export(tmp_path / "bad.dtm", None, path)
    assert not path.exists()
