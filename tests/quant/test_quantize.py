"""dt.quant end to end: SimpleNet trained on the bundled digits, quantized with each calibration method, exported
and compared with its float self (the issue's accuracy check), the same model quantized from its float .dtm, the
fallback of layers whose int8 error is too large, the observers, and every error a user can cause."""

from __future__ import annotations

import numpy as np
import pytest

import dtorch as dt
from dtorch import nn
from dtorch.data import DataLoader
from dtorch.models import SimpleNet
from dtorch.quant import QuantizationError, QuantizedModel
from dtorch.quant import _fixed_point as fp
from dtorch.quant.observers import HistogramObserver, MinMaxObserver, qparams
from dtorch.runtime import InferenceSession


@pytest.fixture(scope="module")
def digits(digit_splits):
    return digit_splits(32)


@pytest.fixture(scope="module")
def trained(digits, train_digits):
    """SimpleNet trained for 6 epochs on the digits (97% on the test split; 3 s)."""
    dt.manual_seed(0)
    model = SimpleNet()
    return train_digits(model, digits[0], dt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), 6)


@pytest.fixture(scope="module")
def loaders(digits):
    train, test = digits
    return DataLoader(train, batch_size=64), DataLoader(test, batch_size=128)


@pytest.mark.parametrize("method", ["minmax", "percentile", "mse"])
def test_int8_simplenet_keeps_its_accuracy(trained, loaders, method):
    calib, val = loaders
    qmodel = dt.quant.quantize(trained, calib, method=method, num_batches=8)
    assert [layer.op for layer in qmodel.layers] == ["conv2d", "conv2d", "conv2d", "adaptive_avg_pool2d", "linear"]
    assert all(layer.quantized for layer in qmodel.layers)
    report = dt.quant.compare(trained, qmodel, val)
    assert report.samples == 360
    assert report.float_accuracy > 0.95
    assert abs(report.accuracy_delta) <= 0.01, report.table()
    assert report.top1_agreement >= 0.98, report.table()
    assert [e.rel_error for e in report.layers] == sorted((e.rel_error for e in report.layers), reverse=True)
    assert all(e.rel_error < 0.05 for e in report.layers)
    assert "top-1 agreement" in report.table() and "backbone.0" in report.table()


def test_exported_int8_model_runs_the_int8_kernels(trained, loaders, tmp_path):
    calib, val = loaders
    qmodel = dt.quant.quantize(trained, calib, num_batches=4)
    x, _ = next(iter(val))
    res = dt.export(qmodel, x[:2], tmp_path / "m_int8.dtm", bundle_example=True)
    ops = set(res.op_list)
    # int8 from the input's quantize to the output's dequantize: the global pool, the flatten and the head too
    assert ops == {"quantize:float32", "qconv2d:int8", "qmean:int8", "reshape:int8", "qlinear:int8",
                   "dequantize:int8"}
    want = qmodel.run(x.numpy())[0]
    for threads in (1, 3):
        for kernels in ("fast", "portable"):
            got = InferenceSession(str(tmp_path / "m_int8.dtm"), threads=threads, kernels=kernels).run(
                None, {"input": x.numpy()})[0]
            np.testing.assert_array_equal(got, want)
    # a different batch size than calibration: the batch dimension stays dynamic
    one = InferenceSession(str(tmp_path / "m_int8.dtm")).run(None, {"input": x.numpy()[:1]})[0]
    np.testing.assert_array_equal(one, want[:1])
    # the float and the int8 file compare as files too
    dt.export(trained, x[:1], tmp_path / "m.dtm", input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    report = dt.quant.compare(tmp_path / "m.dtm", tmp_path / "m_int8.dtm", val, num_batches=1)
    assert report.samples == 128 and report.top1_agreement >= 0.97
    assert isinstance(dt.quant.QuantizedModel.from_file(tmp_path / "m_int8.dtm"), QuantizedModel)


def test_quantizing_the_float_file_gives_the_same_model(trained, loaders, tmp_path):
    calib, val = loaders
    x, _ = next(iter(val))
    dt.export(trained, x[:1], tmp_path / "f.dtm", input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    from_module = dt.quant.quantize(trained, calib, num_batches=3)
    from_file = dt.quant.quantize(tmp_path / "f.dtm", calib, num_batches=3)
    np.testing.assert_array_equal(from_file.run(x.numpy())[0], from_module.run(x.numpy())[0])


def test_fallback_keeps_the_worst_layers_in_float(trained, loaders):
    calib, val = loaders
    base = dt.quant.quantize(trained, calib, num_batches=4)
    errors = sorted(layer.error for layer in base.layers)
    threshold = (errors[-1] + errors[-2]) / 2  # the worst layer alone is above it
    qmodel = dt.quant.quantize(trained, calib, num_batches=4, fallback_threshold=threshold)
    kept = [layer.name for layer in qmodel.fallback_layers]
    assert len(kept) >= 1
    worst = max(base.layers, key=lambda layer: layer.error)
    assert worst.name in kept
    for layer in qmodel.fallback_layers:  # over the threshold, or after a float layer (nothing int8 to take)
        assert "fallback_threshold" in layer.reason or "inputs are float" in layer.reason, layer.reason
    report = dt.quant.compare(trained, qmodel, val)
    assert report.float_layers == kept
    assert report.top1_agreement >= 0.98
    ops = {n.op for n in qmodel.graph.nodes}
    assert ("conv2d" in ops) or ("linear" in ops)


def test_quantize_errors_say_what_is_wrong(trained, loaders):
    calib, _ = loaders
    with pytest.raises(QuantizationError, match="yielded no batches"):
        dt.quant.quantize(trained, [])
    with pytest.raises(QuantizationError, match="unknown method"):
        dt.quant.quantize(trained, calib, method="kl")
    with pytest.raises(QuantizationError, match="num_batches"):
        dt.quant.quantize(trained, calib, num_batches=0)
    with pytest.raises(QuantizationError, match="fallback_threshold"):
        dt.quant.quantize(trained, calib, fallback_threshold=-1)
    with pytest.raises(QuantizationError, match="iterable of batches"):
        dt.quant.quantize(trained, 42)
    wrong = [np.zeros((2, 3, 32, 32), np.float32), np.zeros((2, 5, 32, 32), np.float32)]
    with pytest.raises(QuantizationError, match="batch 1 cannot run"):
        dt.quant.quantize(trained, wrong)

    class NoProducts(nn.Module):
        def forward(self, x):
            return nn.functional.relu(x) * 2

    with pytest.raises(QuantizationError, match="no layer int8 can take"):
        dt.quant.quantize(NoProducts(), [np.ones((1, 4), np.float32)])
    qmodel = dt.quant.quantize(trained, calib, num_batches=1)
    with pytest.raises(QuantizationError, match="already quantized"):
        dt.quant.quantize(qmodel, calib)


def test_a_fused_gelu_becomes_a_table_after_its_layer():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 16)
            self.b = nn.Linear(16, 4)

        def forward(self, x):
            return self.b(nn.functional.gelu(self.a(x)))

    dt.manual_seed(0)
    net = Net().eval()
    data = [np.random.default_rng(i).standard_normal((8, 8)).astype(np.float32) for i in range(4)]
    qmodel = dt.quant.quantize(net, data)
    # the export graph fuses the gelu into a; int8 cannot clamp a gelu, so quantize splits it off as a qlut table
    assert [(layer.name, layer.op) for layer in qmodel.layers] == [("a", "linear"), ("a/gelu", "gelu"),
                                                                   ("b", "linear")]
    assert all(layer.quantized for layer in qmodel.layers)
    lut = next(n for n in qmodel.graph.nodes if n.op == "qlut")
    assert lut.attrs["function"] == "gelu" and lut.inputs[1].data.shape == (256,)
    x = data[0]
    with dt.no_grad():
        want = net(dt.tensor(x)).numpy()
    got = qmodel(x).numpy()
    assert np.max(np.abs(got - want)) < 0.05 * np.max(np.abs(want))


def test_observers():
    mm = MinMaxObserver()
    mm.observe(np.array([-1.0, 2.0, np.nan], np.float32))
    mm.observe(np.array([3.0], np.float32))
    assert mm.range() == (-1.0, 3.0)
    s, zp = qparams(-1.0, 3.0)
    assert s == pytest.approx(4 / 255) and -128 <= zp <= 127
    assert round(-128 - (-1.0) / s) == zp  # 0.0 maps to the zero point exactly
    assert qparams(0.0, 6.0)[1] == -128 and qparams(-2.0, 0.0)[1] == 127 and qparams(0.0, 0.0) == (1.0, 0)
    rng = np.random.default_rng(0)
    data = rng.standard_normal(100_000).astype(np.float32)
    data[:5] = 1000.0  # outliers
    pct = HistogramObserver("percentile", 99.9)
    for part in np.array_split(data, 7):  # the range doubles several times as batches arrive
        pct.observe(part)
    lo, hi = pct.range()
    assert -4.5 < lo < -2.5 and 2.5 < hi < 4.5
    # mse: on a long-tailed distribution it clips the tails, and its range quantizes the data with less error
    # than the full range does
    tailed = rng.laplace(size=200_000).astype(np.float32)
    mse = HistogramObserver("mse")
    mse.observe(tailed)
    lo, hi = mse.range()
    assert tailed.min() < lo < 0 < hi < tailed.max()

    def sq_error(r):
        s, zp = qparams(*r)
        return float(np.mean((fp.dequantize(fp.quantize(tailed, s, zp), s, zp) - tailed) ** 2))

    full = (float(tailed.min()), float(tailed.max()))
    assert sq_error((lo, hi)) < 0.8 * sq_error(full)
    assert sq_error((lo, hi)) <= 1.02 * min(sq_error((full[0] * f, full[1] * f)) for f in np.linspace(0.3, 1, 15))
    with pytest.raises(ValueError, match="percentile"):
        HistogramObserver("percentile", 20)


def test_cli_quantize_and_compare(trained, loaders, tmp_path):
    from click.testing import CliRunner

    from dtorch.edge.cli import main

    calib, val = loaders
    x, _ = next(iter(val))
    dt.export(trained, x[:1], tmp_path / "m.dtm", input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    cal = tmp_path / "calib"
    cal.mkdir()
    for i, (xb, _) in enumerate(calib):
        np.save(cal / f"batch{i:02d}.npy", xb.numpy())
        if i == 3:
            break
    np.save(tmp_path / "val.npy", x.numpy())
    r = CliRunner().invoke(main, ["quantize", str(tmp_path / "m.dtm"), "--calib", str(cal), "-o",
                                  str(tmp_path / "q.dtm"), "--method", "mse"])
    assert r.exit_code == 0, r.output
    assert "backbone.0" in r.output and "5 of 5 layers int8" in r.output
    assert (tmp_path / "q.dtm").exists()
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "m.dtm"), str(tmp_path / "q.dtm"), "--input",
                                  str(tmp_path / "val.npy"), "--json"])
    assert r.exit_code == 0, r.output
    import json

    rep = json.loads(r.output)
    assert rep["samples"] == 128 and rep["top1_agreement"] >= 0.97 and len(rep["layers"]) == 5
    # errors: one clear line, nothing written
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(main, ["quantize", str(tmp_path / "m.dtm"), "--calib", str(empty), "-o",
                                  str(tmp_path / "bad.dtm")])
    assert r.exit_code == 1 and "holds no .npy or .npz files" in r.output
    np.save(tmp_path / "wrong.npy", np.zeros((2, 5, 32, 32), np.float32))
    r = CliRunner().invoke(main, ["quantize", str(tmp_path / "m.dtm"), "--calib", str(tmp_path / "wrong.npy"), "-o",
                                  str(tmp_path / "bad.dtm")])
    assert r.exit_code == 1 and "cannot run through the model" in r.output
    assert not (tmp_path / "bad.dtm").exists()
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "m.dtm"), str(tmp_path / "m.dtm"), "--input",
                                  str(tmp_path / "val.npy")])
    assert r.exit_code == 1 and "no int8 layer" in r.output
