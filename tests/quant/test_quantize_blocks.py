"""dt.quant on the blocks beyond convolutions: a network with a squeeze-excite gate (sigmoid, then a broadcast mul), two
branches concatenated (hardswish on one, a 3x3 avg_pool2d on the other) and an avg_pool2d before its head, trained on
the bundled digits, quantizes to qmul / qlut / qconcat / qavg_pool2d with its float accuracy and top-1; an attention
block (q @ k^T, a constant scale, softmax in float, scores @ v, a gelu MLP) quantizes to qmatmul / qmul / qlut within a
small relative error. The int8 files run in the C++ runtime bit for bit at every thread count and kernel policy, on a
board's CPU build (dtorch.backends' cpu support check) and through the simulated NPU's plan, and export to ONNX (QDQ)."""

from __future__ import annotations

import numpy as np
import pytest
from int8_blocks import Attention, Blocks

import dtorch as dt
from dtorch import nn
from dtorch.data import DataLoader
from dtorch.quant import QuantizationError, QuantizedModel
from dtorch.runtime import InferenceSession

#: The int8 operators of the trained network: everything between the input's quantize and the output's dequantize.
BLOCK_OPS = {"quantize", "qconv2d", "qmean", "qlinear", "qlut", "qmul", "qconcat", "qavg_pool2d", "reshape", "dequantize"}


@pytest.fixture(scope="module")
def digits(digit_splits):
    return digit_splits(16)


@pytest.fixture(scope="module")
def trained(digits, train_digits):
    """Blocks trained for 6 epochs on the 16x16 digits (94% on the test split)."""
    dt.manual_seed(0)
    model = Blocks()
    return train_digits(model, digits[0], dt.optim.Adam(model.parameters(), lr=1e-2), 6)


@pytest.fixture(scope="module")
def quantized(trained, digits):
    return dt.quant.quantize(trained, DataLoader(digits[0], batch_size=64), num_batches=8)


def test_squeeze_excite_concat_and_avg_pool_keep_the_accuracy(trained, quantized, digits):
    q = quantized
    ops = {n.op for n in q.graph.nodes}
    assert ops == BLOCK_OPS, ops  # int8 from end to end: no float mul, concat, pool or activation is left
    assert {n.attrs["function"] for n in q.graph.nodes if n.op == "qlut"} == {"sigmoid", "hardswish"}
    assert [layer.op for layer in q.layers] == [
        "conv2d", "mean", "linear", "linear", "sigmoid", "mul", "conv2d", "hardswish", "conv2d", "avg_pool2d",
        "concat", "conv2d", "avg_pool2d", "mean", "linear"]
    assert all(layer.quantized for layer in q.layers), [(la.name, la.reason) for la in q.layers]
    pools = [layer for layer in q.layers if layer.op == "avg_pool2d"]
    assert all((p.x_scale, p.x_zero_point) == (p.y_scale, p.y_zero_point) for p in pools)  # TFLite's restriction
    gate = next(layer for layer in q.layers if layer.op == "sigmoid")
    assert gate.name == "se2/sigmoid"  # the sigmoid fused into se2 was split off: a table after the qlinear
    report = dt.quant.compare(trained, q, DataLoader(digits[1], batch_size=128))
    assert report.samples == 360
    assert report.float_accuracy > 0.9, report.table()
    assert abs(report.accuracy_delta) <= 0.01, report.table()
    assert report.top1_agreement >= 0.98, report.table()
    assert report.output_rel_error < 0.04, report.table()
    assert all(e.rel_error < 0.05 for e in report.layers), report.table()
    assert {"mul", "concat", "avg_pool2d", "sigmoid", "hardswish"} <= {e.op for e in report.layers}


def test_int8_file_runs_bit_exact_on_the_runtime_and_the_boards(trained, quantized, digits, tmp_path):
    from dtorch._export.reader import read_dtm
    from dtorch.backends import Simulator, check_model, run_model

    q = quantized
    x = np.stack([digits[1][i][0].numpy() for i in range(16)])
    path = tmp_path / "blocks_int8.dtm"
    res = dt.export(q, dt.tensor(x[:2]), path)
    assert {op.split(":")[0] for op in res.op_list} == BLOCK_OPS
    want = q.run(x)[0]
    for threads in (1, 2, 3):
        for kernels in ("fast", "portable"):
            got = InferenceSession(str(path), threads=threads, kernels=kernels).run(None, {"input": x})[0]
            np.testing.assert_array_equal(got, want, err_msg=f"{threads} threads, {kernels}")
    # the board's CPU build takes every node (dtorch.backends' cpu reads the portable kernels from runtime/kernels)
    plan = check_model(path, "rk3588")
    assert plan.unsupported == []
    for a in plan.assignments:
        if a.node.op in ("qmul", "qlut", "qconcat", "qavg_pool2d"):
            assert a.backend == "cpu" and a.kernel == f"portable:{a.node.op}", (a.node.op, a.kernel)
    # the simulated NPU takes concat and pooling within its limits and leaves mul and the tables to the CPU, each
    # with its reason; the plan gives the CPU run's bits
    plan = check_model(path, "rk3588", "npu-sim")
    for a in plan.assignments:
        if a.node.op in ("qmul", "qlut"):
            assert a.backend == "cpu" and a.fallback is not None and a.fallback.reason
        if a.node.op in ("qconcat", "qavg_pool2d"):
            assert a.backend == "npu-sim" or (a.fallback is not None and a.fallback.reason), (a.node.op, a.backend)
    sim = Simulator(plan, read_dtm(path)).run([x[:3]])
    assert [o.tobytes() for o in sim.outputs] == [o.tobytes() for o in run_model(path, [x[:3]])]
    # the file reads back as an int8 model, and compares with the float file (its fused sigmoid split the same way)
    back = QuantizedModel.from_file(path)
    assert [layer.op for layer in back.layers] == [n.op for n in q.graph.nodes if n.op.startswith("q") and
                                                   n.op != "quantize"]
    dt.export(trained, dt.tensor(x[:1]), tmp_path / "blocks.dtm", input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    report = dt.quant.compare(tmp_path / "blocks.dtm", path, DataLoader(digits[1], batch_size=128), num_batches=1)
    assert report.float_layers == [] and report.top1_agreement >= 0.97
    assert "se2/sigmoid" in [e.name for e in report.layers]


def test_int8_blocks_export_to_onnx_qdq(quantized, digits, tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import dtorch.onnx

    x = np.stack([digits[1][i][0].numpy() for i in range(64)])
    path = tmp_path / "blocks_int8.onnx"
    dtorch.onnx.export(quantized, None, path)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    want = quantized.run(x)[0]
    # ONNX Runtime requantizes in float (and rounds an average's ties to even): steps apart, the same top-1
    assert np.mean(got.argmax(1) == want.argmax(1)) >= 0.97
    assert np.max(np.abs(got - want)) < 0.1 * np.max(np.abs(want))


def test_attention_block_quantizes_its_matmuls_and_activations():
    dt.manual_seed(0)
    model = Attention().eval()
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((4, 12, 32)).astype(np.float32) for _ in range(8)]
    q = dt.quant.quantize(model, data)
    ops = [n.op for n in q.graph.nodes]
    assert ops.count("qmatmul") == 3 and "matmul" not in ops and "softmax" in ops  # softmax stays float
    assert {n.attrs["function"] for n in q.graph.nodes if n.op == "qlut"} == {"gelu", "tanh"}
    scale = next(n for n in q.graph.nodes if n.op == "qmul")  # the constant scale: an int8 constant operand
    assert scale.inputs[1].is_const and scale.inputs[1].data.dtype == np.int8
    w = [n for n in q.graph.nodes if n.op == "qmatmul"][-1]
    assert w.inputs[1].is_const and w.inputs[1].data.shape == (32, 8)
    assert all(layer.quantized for layer in q.layers), [(la.name, la.reason) for la in q.layers]
    x = rng.standard_normal((3, 12, 32)).astype(np.float32)
    with dt.no_grad():
        want = model(dt.tensor(x)).numpy()
    got = q(x).numpy()
    rel = float(np.sqrt(np.mean((got - want) ** 2)) / np.sqrt(np.mean(want**2)))
    assert rel < 0.05, rel
    for threads in (1, 3):
        sess = InferenceSession(q.to_bytes(), threads=threads)
        np.testing.assert_array_equal(sess.run(None, {"input": x})[0], q.run(x)[0])


def test_operands_int8_cannot_take_stay_float_with_their_reason():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(x)
            return y * dt.tensor(np.array([1.0, np.inf] * 4, np.float32)) + y

    dt.manual_seed(0)
    q = dt.quant.quantize(Net().eval(), [np.random.default_rng(i).standard_normal((4, 8)).astype(np.float32)
                                         for i in range(2)])
    mul = next(layer for layer in q.layers if layer.op == "mul")
    assert not mul.quantized and "infinity or NaN" in mul.reason
    assert "mul" in {n.op for n in q.graph.nodes}


def test_float_ops_keeps_operator_types_in_float(trained, digits):
    calib = DataLoader(digits[0], batch_size=64)
    q = dt.quant.quantize(trained, calib, num_batches=2, float_ops=("concat", "sigmoid"))
    ops = {n.op for n in q.graph.nodes}
    assert {"concat", "sigmoid", "qmul", "qavg_pool2d"} <= ops and "qconcat" not in ops
    kept = {layer.op: layer.reason for layer in q.layers if not layer.quantized}
    assert kept == {"concat": "float_ops keeps concat in float", "sigmoid": "float_ops keeps sigmoid in float"}
    with pytest.raises(QuantizationError, match="float_ops names softmax, which int8 does not take"):
        dt.quant.quantize(trained, calib, num_batches=1, float_ops=("softmax",))
