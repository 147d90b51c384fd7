"""An imported ONNX model quantized: a MobileNetV2-style network (inverted residuals, depthwise convolutions, ReLU6,
residual adds, global pooling) trained in PyTorch on a synthetic task (which quadrant of a noisy image holds a bright
square), exported by torch.onnx, imported by dtorch.onnx.import_model and quantized from the .dtm; and beside it ONNX
Runtime's own static QDQ quantization (onnxruntime.quantization.quantize_static) of the same ONNX file with the same
calibration data: accuracy and output error side by side."""

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


def test_imported_mobilenetv2_quantizes_and_matches_ort_static_quantization(onnx_model, tmp_path):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    dtm = tmp_path / "mbv2.dtm"
    dt.onnx.import_model(onnx_model, dtm)
    calib = [_data(32, 100 + i)[0] for i in range(8)]
    xv, yv = _data(512, 7)
    val = [(xv[i:i + 128], yv[i:i + 128]) for i in range(0, 512, 128)]

    qmodel = dt.quant.quantize(dtm, calib, method="minmax")
    ops = {n.op for n in qmodel.graph.nodes}
    assert {"qconv2d", "qadd", "qmean", "qlinear"} <= ops, ops
    assert not ({"conv2d", "add", "linear"} & ops), ops  # every layer int8
    dt.export(qmodel, dt.tensor(calib[0][:1]), tmp_path / "mbv2_int8.dtm")
    again = dt.quant.QuantizedModel.from_file(tmp_path / "mbv2_int8.dtm")
    assert [layer.op for layer in again.layers] == [n.op for n in qmodel.graph.nodes if n.op.startswith("q")
                                                    and n.op not in ("quantize",)]
    report = dt.quant.compare(dtm, qmodel, val)
    assert report.float_accuracy >= 0.9, report.table()
    assert abs(report.accuracy_delta) <= 0.01, report.table()
    assert report.top1_agreement >= 0.98, report.table()

    # ONNX Runtime's static QDQ quantization of the same file and calibration data
    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calib)

        def get_next(self):
            b = next(self.it, None)
            return None if b is None else {"input": b}

    qdq = tmp_path / "mbv2_qdq.onnx"
    quantize_static(str(onnx_model), str(qdq), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    f_sess = ort.InferenceSession(str(onnx_model), providers=["CPUExecutionProvider"])
    q_sess = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
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
