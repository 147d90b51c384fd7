"""Quantized ONNX models imported as int8 (dtorch/onnx/_qdq.py, dtorch/onnx/ops/quant.py).

- Models onnxruntime.quantization.quantize_static wrote from a small torch-exported network (convolutions with ReLU and
  ReLU6, a depthwise one, a residual add, max pooling, a token MatMul + bias, a mean, a classifier): QDQ and QOperator
  formats, per-tensor and per-channel weights, uint8 and int8 activations. Each imports into DTorch's int8 operators
  and runs within ONE_STEP_SHARE / MAX_STEPS of ONNX Runtime (its requantization is float, DTorch's fixed point: an
  int8 tensor can be a step apart where a value lies within rounding of a half step), with the same top-1.
- Single-operator QOperator models (QLinearConv, QLinearMatMul, QGemm, QLinearAdd, QLinearGlobalAveragePool) bit for
  bit against the NumPy twin of the int8 kernels (dtorch/quant/_fixed_point.py, int8_twin.py), and within a step of
  ONNX Runtime (equal on at least 97% of the values: with scales that are not round numbers, exact ties are rare).
- A weight with a nonzero zero point (uint8 weights) has no int8 kernel: that layer computes in float between
  dequantize and quantize, and the model still matches ONNX Runtime.
- Errors: unsupported quantized types (int16, uint16, 4-bit, float8), block quantization, malformed scales, a uint8
  tensor reaching an operator that cannot hold it as int8, a quantized graph output: one line naming the node.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import int8_twin as twin  # noqa: E402  (tests/onnx, on the path through conftest.py)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_cases import ort_run  # noqa: E402

import dtorch as dt  # noqa: E402
from dtorch.onnx import OnnxImportError  # noqa: E402
from dtorch.quant import _fixed_point as fp  # noqa: E402
from dtorch.runtime import InferenceSession  # noqa: E402

#: Parity with ONNX Runtime on an imported int8 model, in steps of the output's quantization: at most MAX_STEPS
#: anywhere, and at least ONE_STEP_SHARE of the outputs within one step.
MAX_STEPS = 3
ONE_STEP_SHARE = 0.99
FLOAT_PRODUCTS = {"conv2d", "linear", "matmul", "add"}


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 8, 1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.tok = torch.nn.Linear(16, 16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        a = torch.relu(self.conv1(x))
        b = self.pw(torch.clamp(self.dw(a), 0, 6)) + a
        c = self.conv2(torch.nn.functional.max_pool2d(b, 2))  # (N, 16, 4, 4)
        t = torch.relu(self.tok(c.flatten(2).transpose(1, 2)))  # tokens (N, 16, 16): MatMul + Add
        return self.fc(t.mean(1))


def _images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def float_onnx(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    model = Net().eval()
    path = tmp_path_factory.mktemp("qdq") / "net.onnx"
    torch.onnx.export(model, (torch.tensor(_images(1, 0)),), str(path), input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    return path


def _ort_quantized(src: Path, dst: Path, fmt: str, per_channel: bool, act: str, weight: str = "QInt8") -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    batches = iter([_images(8, 100 + i) for i in range(6)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            b = next(batches, None)
            return None if b is None else {"input": b}

    quantize_static(str(src), str(dst), Reader(), quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                    activation_type=getattr(QuantType, act), weight_type=getattr(QuantType, weight))
    return dst


def _output_scale(path: Path) -> float:
    """The scale of the DequantizeLinear that gives the model's (first) output."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    assert dq.op_type == "DequantizeLinear"
    return float(inits[dq.input[1]].reshape(-1)[0])


def _steps(got: np.ndarray, ref: np.ndarray, scale: float) -> np.ndarray:
    return np.rint(np.abs(got.astype(np.float64) - ref.astype(np.float64)) / scale)


VARIANTS = {
    "qdq_per_tensor_s8": ("QDQ", False, "QInt8"),
    "qdq_per_channel_u8": ("QDQ", True, "QUInt8"),
    "qdq_per_channel_s8": ("QDQ", True, "QInt8"),
    "qop_per_channel_u8": ("QOperator", True, "QUInt8"),
    "qop_per_tensor_s8": ("QOperator", False, "QInt8"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_ort_quantized_model_imports_as_int8(variant: str, float_onnx: Path, tmp_path: Path) -> None:
    fmt, per_channel, act = VARIANTS[variant]
    src = _ort_quantized(float_onnx, tmp_path / f"{variant}.onnx", fmt, per_channel, act)
    dtm = tmp_path / f"{variant}.dtm"
    report = dt.onnx.import_model(src, dtm)  # the built-in parity check runs at its quantized tolerance
    assert report.parity is not None and max(report.parity.values()) <= dt.onnx.importer.QUANTIZED_PARITY_TOLERANCE
    ops = [op.split(":")[0] for op in report.op_list]
    assert {"qconv2d", "qadd", "qlinear", "qmean", "max_pool2d"} <= set(ops), ops
    assert not FLOAT_PRODUCTS & set(ops), (ops, report.quantization)  # every product runs in int8
    assert "qconv2d 4" in report.quantization and "qlinear 2" in report.quantization, report.quantization

    x = _images(64, 7)
    got = InferenceSession(str(dtm)).run(None, {"input": x})[0]
    ref = ort_run(src, {"input": x})[0]
    steps = _steps(got, ref, _output_scale(src))
    share = float(np.mean(steps <= 1))
    agree = float(np.mean(got.argmax(1) == ref.argmax(1)))
    print(f"\n{variant}: max {int(steps.max())} output steps from ONNX Runtime, {share:.4f} within one step, "
          f"{float(np.mean(steps == 0)):.4f} equal; top-1 agreement {agree:.4f}")
    assert steps.max() <= MAX_STEPS and share >= ONE_STEP_SHARE
    assert agree >= 0.98


def test_asymmetric_weights_compute_in_float_and_still_match(float_onnx: Path, tmp_path: Path) -> None:
    """uint8 weights (a nonzero zero point): no int8 kernel takes them, so those products compute in float32 between
    dequantize and quantize (the requantization then is the float one: closer to ONNX Runtime still)."""
    src = _ort_quantized(float_onnx, tmp_path / "u8w.onnx", "QDQ", False, "QUInt8", weight="QUInt8")
    dtm = tmp_path / "u8w.dtm"
    report = dt.onnx.import_model(src, dtm)
    ops = {op.split(":")[0] for op in report.op_list}
    assert "conv2d" in ops and "qadd" in ops, ops
    x = _images(32, 8)
    got = InferenceSession(str(dtm)).run(None, {"input": x})[0]
    ref = ort_run(src, {"input": x})[0]
    steps = _steps(got, ref, _output_scale(src))
    assert steps.max() <= MAX_STEPS and float(np.mean(steps <= 1)) >= ONE_STEP_SHARE


# --- single operators against the NumPy twin ---------------------------------------------------------------------
def _init(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(arr), name)


def _qop_model(path: Path, node: onnx.NodeProto, inits: list[onnx.TensorProto], in_shapes: dict[str, list[int]],
               in_params: dict[str, tuple[float, int]], out_params: tuple[float, int], out_shape: list[int],
               dtype: type = np.uint8) -> Path:
    """float inputs -> QuantizeLinear -> node -> DequantizeLinear -> float output."""
    nodes, extra = [], []
    for name, (s, z) in in_params.items():
        extra += [_init(f"{name}_s", np.float32(s)), _init(f"{name}_z", np.array(z, dtype))]
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
    extra += [_init("y_s", np.float32(out_params[0])), _init("y_z", np.array(out_params[1], dtype))]
    nodes += [node, helper.make_node("DequantizeLinear", ["y_q", "y_s", "y_z"], ["y"])]
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in
                                       in_shapes.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits + extra)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(m, str(path))
    return path


def _f32(*xs: float) -> tuple[float, ...]:
    """Scales as the model holds them (float32), for the twin's arithmetic."""
    return tuple(float(np.float32(x)) for x in xs)


def _q(x: np.ndarray, s: float, z: int, dtype: type) -> np.ndarray:
    """ONNX QuantizeLinear into uint8 / int8, as int64."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(x / np.float32(s)) + z, info.min, info.max).astype(np.int64)


def _dq(q: np.ndarray, s: float, z: int) -> np.ndarray:
    return (q - z).astype(np.float32) * np.float32(s)


def _run_both(path: Path, tmp_path: Path, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    dtm = tmp_path / (path.stem + ".dtm")
    report = dt.onnx.import_model(path, dtm, dynamic_axes=[])
    got = InferenceSession(str(dtm)).run(None, feeds)[0]
    ref = ort_run(path, feeds)[0]
    return got, ref, [op.split(":")[0] for op in report.op_list]


def _close_to_ort(got: np.ndarray, ref: np.ndarray, scale: float) -> None:
    steps = _steps(got, ref, scale)
    assert steps.max() <= 1 and float(np.mean(steps == 0)) >= 0.97, (steps.max(), float(np.mean(steps == 0)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinearconv_is_bit_exact_with_the_numpy_twin(dtype: type, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    c, o, k, groups = 4, 6, 3, 2
    w = rng.integers(-127, 128, (o, c // groups, k, k)).astype(np.int8)
    ws = (rng.uniform(0.5, 2.0, o) * 2e-3).astype(np.float32)
    (xs, ys), xz, yz = _f32(0.0213, 0.0517), (131 if dtype == np.uint8 else 3), (120 if dtype == np.uint8 else -8)
    b = rng.integers(-3000, 3000, o).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x_q", "x_s", "x_z", "w", "ws", "wz", "y_s", "y_z", "b"], ["y_q"],
                            kernel_shape=[k, k], pads=[1, 0, 1, 2], strides=[2, 1], group=groups)
    path = _qop_model(tmp_path / "conv.onnx", node, [_init("w", w), _init("ws", ws), _init("wz", np.zeros(o, np.int8)),
                                                     _init("b", b)], {"x": [2, c, 9, 8]}, {"x": (xs, xz)}, (ys, yz),
                      [2, o, 5, 8], dtype)
    x = (rng.standard_normal((2, c, 9, 8)) * 1.2).astype(np.float32)
    got, ref, ops = _run_both(path, tmp_path, {"x": x})
    assert "qconv2d" in ops and "conv2d" not in ops, ops
    shift = 128 if dtype == np.uint8 else 0  # the twin in int8, as DTorch holds uint8 tensors
    attrs = {"stride": [2, 1], "padding": [1, 1, 0, 2], "groups": groups, "x_scale": xs, "x_zero_point": xz - shift,
             "y_scale": ys, "y_zero_point": yz - shift}
    y = twin.qconv2d((_q(x, xs, xz, dtype) - shift).astype(np.int8), w, ws, b, attrs).astype(np.int64) + shift
    np.testing.assert_array_equal(got, _dq(y, ys, yz))
    _close_to_ort(got, ref, ys)


@pytest.mark.parametrize("op", ["QLinearMatMul", "QGemm"])
def test_qlinear_matmul_and_qgemm_are_bit_exact_with_the_numpy_twin(op: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    k, n = 12, 5
    wt = rng.integers(-127, 128, (k, n)).astype(np.int8)  # B (K, N)
    ws = (rng.uniform(0.5, 2.0, n) * 3e-3).astype(np.float32)
    (xs, ys), xz, yz = _f32(0.0311, 0.0419), 140, 110
    b = rng.integers(-2000, 2000, n).astype(np.int32)
    inits = [_init("ws", ws), _init("wz", np.zeros(n, np.int8))]
    if op == "QGemm":  # B given transposed (N, K), with a bias
        inits += [_init("w", np.ascontiguousarray(wt.T)), _init("b", b)]
        node = helper.make_node("QGemm", ["x_q", "x_s", "x_z", "w", "ws", "wz", "b", "y_s", "y_z"], ["y_q"],
                                domain="com.microsoft", transB=1)
    else:
        inits += [_init("w", wt)]
        node = helper.make_node("QLinearMatMul", ["x_q", "x_s", "x_z", "w", "ws", "wz", "y_s", "y_z"], ["y_q"])
    path = _qop_model(tmp_path / f"{op}.onnx", node, inits, {"x": [7, k]}, {"x": (xs, xz)}, (ys, yz), [7, n])
    x = rng.standard_normal((7, k)).astype(np.float32) * 2
    got, ref, ops = _run_both(path, tmp_path, {"x": x})
    assert "qlinear" in ops and "linear" not in ops and "matmul" not in ops, ops
    attrs = {"x_scale": xs, "x_zero_point": xz - 128, "y_scale": ys, "y_zero_point": yz - 128}
    y = twin.qlinear((_q(x, xs, xz, np.uint8) - 128).astype(np.int8), wt.T, ws, b if op == "QGemm" else None, attrs)
    np.testing.assert_array_equal(got, _dq(y.astype(np.int64) + 128, ys, yz))
    _close_to_ort(got, ref, ys)


def test_qlinearadd_and_global_average_pool_are_bit_exact_with_the_numpy_twin(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    (sa, sb, ss, sm), (za, zb, zs, zm) = _f32(0.0213, 0.0517, 0.0611, 0.0307), (120, 140, 100, 125)
    nodes = [helper.make_node("QLinearAdd", ["a_q", "a_s", "a_z", "b_q", "b_s", "b_z", "s_s", "s_z"], ["s_q"],
                              domain="com.microsoft"),
             helper.make_node("QLinearGlobalAveragePool", ["s_q", "s_s", "s_z", "m_s", "m_z"], ["y_q"],
                              domain="com.microsoft", channels_last=0)]
    inits = [_init("s_s", np.float32(ss)), _init("s_z", np.uint8(zs)), _init("m_s", np.float32(sm)),
             _init("m_z", np.uint8(zm))]
    g_path = tmp_path / "add_pool.onnx"
    _qop_model(g_path, nodes[0], inits, {"a": [2, 16, 5, 5], "b": [1, 16, 1, 5]},
               {"a": (sa, za), "b": (sb, zb)}, (sm, zm), [2, 16, 1, 1])
    m = onnx.load(str(g_path))  # the second node between QLinearAdd and the output's DequantizeLinear
    m.graph.node.insert(len(m.graph.node) - 1, nodes[1])
    onnx.save(m, str(g_path))
    a = rng.standard_normal((2, 16, 5, 5)).astype(np.float32) * 2
    bb = rng.standard_normal((1, 16, 1, 5)).astype(np.float32) * 4
    got, ref, ops = _run_both(g_path, tmp_path, {"a": a, "b": bb})
    assert {"qadd", "qmean"} <= set(ops) and not {"add", "mean"} & set(ops), ops
    s = fp.qadd(_q(a, sa, za, np.uint8) - 128, _q(bb, sb, zb, np.uint8) - 128, sa, za - 128, sb, zb - 128, ss, zs - 128)
    y = fp.qmean(s, (2, 3), True, ss, zs - 128, sm, zm - 128).astype(np.int64) + 128
    np.testing.assert_array_equal(got, _dq(y, sm, zm))
    _close_to_ort(got, ref, sm)


def test_weights_quantized_in_the_graph_and_a_float_bias_fuse(tmp_path: Path) -> None:
    """A QAT-style QDQ graph: the weight stored in float and quantized by a QuantizeLinear in the graph (per channel),
    the bias in float: still one qconv2d (the bias rounded to int32 at x_scale * w_scale), within a step of ONNX
    Runtime."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((6, 4, 3, 3)) * 0.2).astype(np.float32)
    ws = (np.abs(w).reshape(6, -1).max(1) / 127).astype(np.float32)
    inits = [_init("w", w), _init("ws", ws), _init("wz", np.zeros(6, np.int8)), _init("b", rng.standard_normal(6)
                                                                                     .astype(np.float32) * 0.1),
             _init("xs", np.float32(0.0271)), _init("xz", np.int8(-4)), _init("ys", np.float32(0.0419)),
             _init("yz", np.int8(7))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], axis=0),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "qat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 6, 6])], inits)
    path = tmp_path / "qat.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32) * 1.5
    got, ref, ops = _run_both(path, tmp_path, {"x": x})
    assert "qconv2d" in ops and "conv2d" not in ops, ops
    _close_to_ort(got, ref, float(np.float32(0.0419)))


# --- errors --------------------------------------------------------------------------------------------------------
def _qdq_file(path: Path, opset: int, scale: np.ndarray, zero_point: np.ndarray | None, **attrs) -> Path:
    """x -> QuantizeLinear -> DequantizeLinear -> y with the given parameters."""
    inits = [_init("s", scale)] + ([] if zero_point is None else [_init("z", zero_point)])
    zin = ["z"] if zero_point is not None else []
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", *zin], ["q"], name="quant", **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", *zin], ["y"], name="dequant")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def _refused(path: Path, tmp_path: Path, *needles: str) -> str:
    with pytest.raises(OnnxImportError) as e:
        dt.onnx.import_model(path, tmp_path / "out.dtm")
    msg = str(e.value)
    assert "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, msg
    assert not (tmp_path / "out.dtm").exists()
    return msg


@pytest.mark.parametrize("dtype", [np.int16, np.uint16])
def test_16bit_types_are_refused(dtype: type, tmp_path: Path) -> None:
    path = _qdq_file(tmp_path / "m.onnx", 21, np.float32(0.1), np.array(0, dtype))
    _refused(path, tmp_path, "'quant'", "QuantizeLinear", np.dtype(dtype).name, "int8")


@pytest.mark.parametrize("elem", [TensorProto.FLOAT8E4M3FN, TensorProto.INT4, TensorProto.UINT4])
def test_float8_and_4bit_types_are_refused(elem: int, tmp_path: Path) -> None:
    z = helper.make_tensor("z", elem, [], [0])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [_init("s", np.float32(0.5)), z])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), str(path))
    _refused(path, tmp_path, "'quant'", "QuantizeLinear", "dtorch's int8 kernels take int8 and uint8")


def test_block_quantization_is_refused(tmp_path: Path) -> None:
    w = np.arange(-8, 8, dtype=np.int8).reshape(2, 8)
    g = helper.make_graph([helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"], name="wdq", axis=1, block_size=4),
                           helper.make_node("MatMul", ["x", "wf"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
                          [_init("w", w), _init("ws", np.full((2, 2), 0.1, np.float32))])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), str(path))
    _refused(path, tmp_path, "'wdq'", "DequantizeLinear", "block quantization (block_size 4)")


@pytest.mark.parametrize("bad", [0.0, -0.5, np.inf, np.nan])
def test_malformed_scales_are_refused(bad: float, tmp_path: Path) -> None:
    path = _qdq_file(tmp_path / "m.onnx", 13, np.float32(bad), np.array(0, np.int8))
    _refused(path, tmp_path, "'quant'", "a scale must be finite and > 0", repr(float(bad)))


def test_per_axis_scale_with_one_bad_value_is_refused(tmp_path: Path) -> None:
    path = _qdq_file(tmp_path / "m.onnx", 13, np.array([0.1, 0.0, 0.2], np.float32), np.zeros(3, np.int8), axis=1)
    _refused(path, tmp_path, "'quant'", "holds 0.0")


def test_per_axis_quantization_of_a_computed_tensor_is_refused(tmp_path: Path) -> None:
    path = _qdq_file(tmp_path / "m.onnx", 13, np.array([0.1, 0.3, 0.2], np.float32), np.zeros(3, np.int8), axis=1)
    _refused(path, tmp_path, "'quant'", "quantized per axis (3 scales)")


def test_zero_point_of_another_type_is_refused(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], name="wdq"),
                           helper.make_node("Add", ["x", "wf"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [_init("w", np.ones((2, 3), np.int8)), _init("s", np.float32(0.1)), _init("z", np.uint8(3))])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    _refused(path, tmp_path, "'wdq'", "its zero point 'z' is uint8 but its input 'w' is int8")


def test_computed_scale_is_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("Abs", ["x"], ["s2"]), helper.make_node("ReduceMax", ["s2"], ["s"], keepdims=0),
             helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dequant")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    _refused(path, tmp_path, "'quant'", "must be a constant")


def test_uint8_tensor_into_another_operator_is_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("Cast", ["q"], ["c"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["c", "x"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [_init("s", np.float32(0.1)), _init("z", np.uint8(128))])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    _refused(path, tmp_path, "'cast'", "uint8 quantized tensor", "holds as int8")


def test_quantized_graph_output_is_refused(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="quant")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("q", TensorProto.UINT8, [2, 3])], [_init("s", np.float32(0.1))])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    _refused(path, tmp_path, "output 'q'", "uint8", "end the model with a DequantizeLinear")


def test_uint8_quantize_dequantize_pair_is_exact(tmp_path: Path) -> None:
    """QuantizeLinear -> DequantizeLinear with a uint8 zero point (held as int8 with zero point - 128) gives ONNX's
    values exactly, the default zero point (absent: uint8 0) included."""
    x = (np.random.default_rng(4).standard_normal((2, 3)) * 20).astype(np.float32)
    for zp in (np.uint8(3), None):
        path = _qdq_file(tmp_path / f"m{zp}.onnx", 13, np.float32(0.1), None if zp is None else np.array(zp))
        dtm = tmp_path / f"m{zp}.dtm"
        dt.onnx.import_model(path, dtm, dynamic_axes=[])
        got = InferenceSession(str(dtm)).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, ort_run(path, {"x": x})[0])
