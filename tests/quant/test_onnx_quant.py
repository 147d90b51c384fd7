"""An imported ONNX model quantized: a MobileNetV2-style network (inverted residuals, depthwise convolutions, ReLU6,
residual adds, global pooling) trained in PyTorch on a synthetic task (which quadrant of a noisy image holds a bright
square), exported by torch.onnx, imported by dtorch.onnx.import_model and quantized from the .dtm; and beside it ONNX
Runtime's own static QDQ quantization (onnxruntime.quantization.quantize_static) of the same ONNX file with the same
calibration data: accuracy and output error side by side; and ONNX Runtime's QDQ model itself imported by
dtorch.onnx.import_model into DTorch's int8 kernels, with ONNX Runtime's accuracy."""

from __future__ import annotations

import numpy as np
import pytest

import dtorch as dt

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
from torch import nn  # noqa: E402


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.8, size=(n, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 4, size=n)
    for i in range(n):
        r0, c0 = (y[i] // 2) * 16 + rng.integers(2, 8), (y[i] % 2) * 16 + rng.integers(2, 8)
        x[i, :, r0:r0 + 6, c0:c0 + 6] += rng.uniform(0.5, 1.2)
    return x, y


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.res = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.body(x) if self.res else self.body(x)


class TinyMobileNetV2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.blocks = nn.Sequential(Block(16, 16, 1, 2), Block(16, 24, 2, 4), Block(24, 24, 1, 4), Block(24, 32, 2, 4))
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyMobileNetV2()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = _data(1024, 0)
    for step in range(120):
        i = np.random.default_rng(step).integers(0, len(x), 64)
        loss = nn.functional.cross_entropy(model(torch.tensor(x[i])), torch.tensor(y[i]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    path = tmp_path_factory.mktemp("onnxq") / "mbv2.onnx"
    torch.onnx.export(model, (torch.tensor(x[:1]),), str(path), input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    return path


CALIB = [_data(32, 100 + i)[0] for i in range(8)]


@pytest.fixture(scope="module")
def ort_qdq(onnx_model):
    """ONNX Runtime's static QDQ quantization of the same file with the same calibration data."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(CALIB)

        def get_next(self):
            b = next(self.it, None)
            return None if b is None else {"input": b}

    qdq = onnx_model.parent / "mbv2_qdq.onnx"
    quantize_static(str(onnx_model), str(qdq), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return qdq


def _ort(path):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def test_imported_mobilenetv2_quantizes_and_matches_ort_static_quantization(onnx_model, ort_qdq, tmp_path):
    dtm = tmp_path / "mbv2.dtm"
    dt.onnx.import_model(onnx_model, dtm)
    xv, yv = _data(512, 7)
    val = [(xv[i:i + 128], yv[i:i + 128]) for i in range(0, 512, 128)]

    qmodel = dt.quant.quantize(dtm, CALIB, method="minmax")
    ops = {n.op for n in qmodel.graph.nodes}
    assert {"qconv2d", "qadd", "qmean", "qlinear"} <= ops, ops
    assert not ({"conv2d", "add", "linear"} & ops), ops  # every layer int8
    dt.export(qmodel, dt.tensor(CALIB[0][:1]), tmp_path / "mbv2_int8.dtm")
    again = dt.quant.QuantizedModel.from_file(tmp_path / "mbv2_int8.dtm")
    assert [layer.op for layer in again.layers] == [n.op for n in qmodel.graph.nodes if n.op.startswith("q")
                                                    and n.op not in ("quantize",)]
    report = dt.quant.compare(dtm, qmodel, val)
    assert report.float_accuracy >= 0.9, report.table()
    assert abs(report.accuracy_delta) <= 0.01, report.table()
    assert report.top1_agreement >= 0.98, report.table()

    # ONNX Runtime's static QDQ quantization of the same file and calibration data
    f_sess, q_sess = _ort(onnx_model), _ort(ort_qdq)
    f_out = np.concatenate([f_sess.run(None, {"input": x})[0] for x, _ in val])
    o_out = np.concatenate([q_sess.run(None, {"input": x})[0] for x, _ in val])
    d_out = np.concatenate([qmodel.run(x)[0] for x, _ in val])
    ort_acc = float(np.mean(o_out.argmax(1) == yv))
    ours_err = float(np.sqrt(np.mean((d_out - f_out) ** 2)) / np.sqrt(np.mean(f_out**2)))
    ort_err = float(np.sqrt(np.mean((o_out - f_out) ** 2)) / np.sqrt(np.mean(f_out**2)))
    print(f"\nint8 accuracy: dtorch {report.int8_accuracy:.4f}, ONNX Runtime QDQ {ort_acc:.4f} (float "
          f"{report.float_accuracy:.4f}); output relative RMS error: dtorch {ours_err:.4f}, ONNX Runtime {ort_err:.4f}")
    assert report.int8_accuracy >= ort_acc - 0.01
    assert ours_err <= 2 * ort_err + 0.01


def test_ort_qdq_model_imports_into_the_int8_kernels_with_ort_accuracy(ort_qdq, tmp_path):
    """ONNX Runtime's QDQ model itself, imported: every layer in DTorch's int8 kernels, the accuracy ONNX Runtime's
    model has, the same top-1 on (nearly) every sample, the logits within a few of their quantization steps (DTorch
    requantizes in fixed point, ONNX Runtime in float: an int8 tensor can be a step apart)."""
    import onnx
    from onnx import numpy_helper

    dtm = tmp_path / "mbv2_qdq.dtm"
    report = dt.onnx.import_model(ort_qdq, dtm)
    ops = {op.split(":")[0] for op in report.op_list}
    assert {"qconv2d", "qadd", "qmean", "qlinear"} <= ops, report.quantization
    assert not ({"conv2d", "add", "linear", "mean"} & ops), report.quantization
    xv, yv = _data(512, 7)
    session = dt.runtime.InferenceSession(str(dtm))
    o_out = np.concatenate([_ort(ort_qdq).run(None, {"input": xv[i:i + 128]})[0] for i in range(0, 512, 128)])
    d_out = np.concatenate([session.run(None, {"input": xv[i:i + 128]})[0] for i in range(0, 512, 128)])
    m = onnx.load(str(ort_qdq))
    dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    scale = float(next(numpy_helper.to_array(t) for t in m.graph.initializer if t.name == dq.input[1]))
    steps = np.rint(np.abs(d_out.astype(np.float64) - o_out) / scale)
    ort_acc, ours = float(np.mean(o_out.argmax(1) == yv)), float(np.mean(d_out.argmax(1) == yv))
    agree = float(np.mean(o_out.argmax(1) == d_out.argmax(1)))
    print(f"\nORT's QDQ model: accuracy ONNX Runtime {ort_acc:.4f}, imported into dtorch {ours:.4f}; top-1 agreement "
          f"{agree:.4f}; logits: max {int(steps.max())} steps apart, {float(np.mean(steps == 0)):.4f} equal, "
          f"{float(np.mean(steps <= 1)):.4f} within one step")
    assert abs(ours - ort_acc) <= 0.004  # two samples of 512
    assert agree >= 0.99
    assert float(np.mean(steps <= 1)) >= 0.95 and steps.max() <= 8
