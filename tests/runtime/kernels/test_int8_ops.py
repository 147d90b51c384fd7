"""The int8 operators on activations (qmul, qmatmul, qconcat, qavg_pool2d, qlut) bit for bit against their NumPy twins
in dtorch/quant/_fixed_point.py, which follow TFLite's int8 reference kernels: broadcasting, edge values (-128 and 127,
zero points at the ends of the range, saturated outputs), every thread count giving the same bits, the real-valued
meaning within one output step (PyTorch's float operator on the dequantized inputs), and every error a hand-written
file can cause."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dtorch.catalogue.quant import QLUT_FUNCTIONS
from dtorch.quant import _fixed_point as fp

from .helpers import _C, run

THREADS = (1, 2, 3)


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))  # the same data in every run


def _i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def _same_for_every_thread_count(op: str, attrs: dict, inputs: list, want: np.ndarray) -> np.ndarray:
    got = None
    for threads in THREADS:
        got = run(op, attrs, inputs, threads=threads)
        assert got.dtype == np.int8 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{op}, {threads} threads")
    assert got is not None
    return got


def _s(x: float) -> float:
    return float(np.float32(x))


def _pair(a_zp: int = -7, b_zp: int = 12, y_scale: float = 0.05, y_zp: int = -3, activation: str = "none") -> dict:
    return {"a_scale": _s(0.031), "a_zero_point": a_zp, "b_scale": _s(0.017), "b_zero_point": b_zp,
            "y_scale": _s(y_scale), "y_zero_point": y_zp, "activation": activation}


def _ideal(real: np.ndarray, y_scale: float, y_zp: int, activation: str = "none") -> np.ndarray:
    """The output an exact real computation would give: quantize once (ties to even), then the clamp."""
    if activation != "none":
        real = np.maximum(real, 0)
    if activation == "relu6":
        real = np.minimum(real, 6)
    return np.clip(np.rint(real / y_scale) + y_zp, -128, 127)


# --- qmul ------------------------------------------------------------------------------------------------------------

MUL_SHAPES = [((2, 8, 5, 5), (2, 8, 1, 1)),  # squeeze-excite: a per-channel gate
              ((4, 9), (9,)), ((3, 1, 5), (1, 4, 1)), ((2, 3), (1,)), ((6, 7), (6, 7))]


@pytest.mark.parametrize("shapes", MUL_SHAPES)
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qmul_is_bit_exact_and_multiplies_the_real_values(shapes, activation):
    rng = _rng("mul", shapes, activation)
    a, b = _i8(rng, *shapes[0]), _i8(rng, *shapes[1])
    attrs = _pair(y_scale=0.3, activation=activation)
    want = fp.qmul(a, b, *attrs.values())
    got = _same_for_every_thread_count("qmul", attrs, [a, b], want)
    real = fp.dequantize(a, attrs["a_scale"], -7).astype(np.float64) * fp.dequantize(b, attrs["b_scale"], 12)
    ideal = _ideal(real, attrs["y_scale"], attrs["y_zero_point"], activation)
    assert np.max(np.abs(got.astype(np.int64) - ideal)) <= 1
    assert np.mean(got == ideal) > 0.97


def test_qmul_edge_values_and_saturation():
    # zero points at the ends of the range: every factor (q - zp) reaches +-255 and the product 65025
    q = np.arange(-128, 128, dtype=np.int8)
    a, b = q.reshape(-1, 1), q.reshape(1, -1)  # every pair of int8 values
    for a_zp, b_zp in ((-128, 127), (127, -128), (0, 0), (-128, -128)):
        for y_scale, y_zp in ((0.002, 0), (40.0, 127), (3.0, -128)):  # saturating, and wide
            attrs = _pair(a_zp, b_zp, y_scale, y_zp)
            want = fp.qmul(a, b, *attrs.values())
            got = _same_for_every_thread_count("qmul", attrs, [a, b], want)
            if y_scale == 0.002:  # saturated (at both ends where the factors take both signs)
                ends = (-128, 127) if (a_zp, b_zp) == (0, 0) else (int(want.min()),)
                assert all((got == e).any() for e in ends) and np.isin(got, (-128, 127)).any()
            real = (a.astype(np.float64) - a_zp) * attrs["a_scale"] * (b.astype(np.float64) - b_zp) * attrs["b_scale"]
            assert np.max(np.abs(got - _ideal(real, attrs["y_scale"], y_zp))) <= 1


def test_qmul_errors_name_the_problem():
    x = np.zeros((2, 3), np.int8)
    with pytest.raises(Exception, match="cannot be broadcast"):
        run("qmul", _pair(), [x, np.zeros((4,), np.int8)])
    with pytest.raises(Exception, match="qmul"):
        run("qmul", _pair(), [x, np.zeros((2, 3), np.float32)])
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        run("qmul", {**_pair(), "a_scale": 1e20, "b_scale": 1e10, "y_scale": 1e-20}, [x, x])
    with pytest.raises(Exception, match="b_scale must be a finite number > 0"):
        run("qmul", {**_pair(), "b_scale": 0.0}, [x, x])
    with pytest.raises(Exception, match="activation"):
        run("qmul", {**_pair(), "activation": "sigmoid"}, [x, x])


# --- qmatmul ---------------------------------------------------------------------------------------------------------

MATMUL_SHAPES = [((2, 3, 5, 7), (7, 6)), ((4, 5, 70), (4, 70, 130)),  # several 64-column blocks and a remainder
                 ((2, 1, 3, 4), (1, 5, 4, 2)),  # batch broadcasting
                 ((33,), (33,)), ((5, 33), (33,)), ((33,), (2, 33, 7))]  # 1-D promotion


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
@pytest.mark.parametrize("activation", ["none", "relu6"])
def test_qmatmul_is_bit_exact_and_follows_torch_matmul(shapes, activation):
    rng = _rng("matmul", shapes, activation)
    a, b = _i8(rng, *shapes[0]), _i8(rng, *shapes[1])
    k = shapes[0][-1]
    attrs = _pair(y_scale=0.031 * 0.017 * 40 * np.sqrt(k), activation=activation)
    want = fp.qmatmul(a, b, *attrs.values())
    got = _same_for_every_thread_count("qmatmul", attrs, [a, b], want)
    real = torch.matmul(torch.tensor(fp.dequantize(a, attrs["a_scale"], -7), dtype=torch.float64),
                        torch.tensor(fp.dequantize(b, attrs["b_scale"], 12), dtype=torch.float64)).numpy()
    assert got.shape == real.shape
    assert np.max(np.abs(got - _ideal(real, attrs["y_scale"], attrs["y_zero_point"], activation))) <= 1


def test_qmatmul_edge_values_and_the_int32_wrap():
    # every product at its largest, (127 + 128) * (-128 - 127) = -65025: exact for K = 300; past -2^31 (K = 40000)
    # the int32 sum wraps modulo 2^32, as documented (and as qlinear's)
    attrs = _pair(-128, 127, y_scale=1e3, y_zp=0)
    real_step = attrs["a_scale"] * attrs["b_scale"] / attrs["y_scale"]
    for k, want_value in ((300, round(-65025 * 300 * real_step)), (40_000, 127)):
        a = np.full((1, k), 127, np.int8)
        b = np.full((k, 2), -128, np.int8)
        want = fp.qmatmul(a, b, *attrs.values())
        got = _same_for_every_thread_count("qmatmul", attrs, [a, b], want)
        assert (got == want_value).all(), (k, got, want_value)


def test_qmatmul_errors_name_the_problem():
    a = np.zeros((2, 3, 4), np.int8)
    with pytest.raises(Exception, match="cannot be multiplied"):
        run("qmatmul", _pair(), [a, np.zeros((5, 2), np.int8)])
    with pytest.raises(Exception, match="cannot be broadcast"):
        run("qmatmul", _pair(), [a, np.zeros((3, 4, 2), np.int8)])
    with pytest.raises(Exception, match="at least 1 dimension"):
        run("qmatmul", _pair(), [np.zeros((), np.int8), a])
    with pytest.raises(Exception, match="qmatmul"):
        run("qmatmul", _pair(), [a.astype(np.float32), np.zeros((4, 2), np.int8)])
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        run("qmatmul", {**_pair(), "y_scale": 1e-30}, [a, np.zeros((4, 2), np.int8)])


# --- qconcat ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_qconcat_requantizes_each_input_to_the_output(axis):
    rng = _rng("concat", axis)
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, n in enumerate((1, 5, 2)):
        shapes[i][axis] = n
    xs = [_i8(rng, *sh) for sh in shapes]
    scales, zps = [_s(0.05), _s(0.0213), _s(0.2)], [-4, -128, 0]
    attrs = {"axis": axis, "x_scales": scales, "x_zero_points": zps, "y_scale": _s(0.05), "y_zero_point": -4}
    want = fp.qconcat(xs, axis, scales, zps, attrs["y_scale"], -4)
    got = _same_for_every_thread_count("qconcat", attrs, xs, want)
    first = [slice(None)] * 3
    first[axis] = slice(0, shapes[0][axis])
    np.testing.assert_array_equal(got[tuple(first)], xs[0])  # the output's own quantization: copied
    real = np.concatenate([fp.dequantize(x, s, z).astype(np.float64) for x, s, z in zip(xs, scales, zps)], axis)
    ideal = _ideal(real, attrs["y_scale"], -4)
    assert np.max(np.abs(got - ideal)) <= 1 and np.mean(got == ideal) > 0.97
    assert (got == 127).any() and (got == -128).any()  # the wide third input saturates


def test_qconcat_one_input_and_int8_extremes():
    q = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    for s, zp in ((_s(0.1), -128), (_s(0.1), 127), (_s(0.7), 0)):
        attrs = {"axis": 1, "x_scales": [s], "x_zero_points": [zp], "y_scale": _s(0.1), "y_zero_point": 0}
        want = fp.qconcat([q], 1, [s], [zp], attrs["y_scale"], 0)
        _same_for_every_thread_count("qconcat", attrs, [q], want)


def test_qconcat_errors_name_the_problem():
    x = np.zeros((2, 3), np.int8)
    base = {"axis": 1, "x_scales": [0.1, 0.1], "x_zero_points": [0, 0], "y_scale": 0.1, "y_zero_point": 0}
    with pytest.raises(Exception, match="one value per input"):
        run("qconcat", {**base, "x_scales": [0.1]}, [x, x])
    with pytest.raises(Exception, match=r"x_scales\[1\] must be a finite number > 0"):
        run("qconcat", {**base, "x_scales": [0.1, 0.0]}, [x, x])
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        run("qconcat", {**base, "y_scale": 1e-20}, [x, x])
    with pytest.raises(Exception, match="does not match input 0's shape"):
        run("qconcat", base, [x, np.zeros((3, 3), np.int8)])
    with pytest.raises(Exception, match="int8"):
        run("qconcat", base, [x, np.zeros((2, 3), np.float32)])
    with pytest.raises(Exception, match="out of range"):
        run("qconcat", {**base, "axis": 2}, [x, x])


# --- qavg_pool2d -----------------------------------------------------------------------------------------------------

POOL_CASES = [
    {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]},
    {"kernel": [2, 2]},
    {"kernel": [2, 2], "padding": [1, 1], "ceil_mode": 1, "count_include_pad": 0},
    {"kernel": [3, 2], "stride": [2, 3], "padding": [1, 1], "ceil_mode": 1},
    {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "divisor_override": 5},
    {"kernel": [4, 4], "stride": [3, 3], "padding": [2, 2], "ceil_mode": 1, "count_include_pad": 0},
]


def _twin_pool(x: np.ndarray, a: dict) -> np.ndarray:
    return fp.qavg_pool2d(x, tuple(a["kernel"]), tuple(a.get("stride", a["kernel"])), tuple(a.get("padding", [0, 0])),
                          a["zero_point"], bool(a.get("ceil_mode", 0)), bool(a.get("count_include_pad", 1)),
                          a.get("divisor_override", 0))


def _tflite_average_pool(x: np.ndarray, kernel, stride, padding) -> np.ndarray:
    """TFLite's reference int8 AveragePool (reference_integer_ops/pooling.h), transliterated: the sum of the int8
    values inside the input, filter_count of them, rounded half away from zero, clamped."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out = np.zeros((n, c, oh, ow), np.int8)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    acc, count = 0, 0
                    for fy in range(max(0, ph - i * sh), min(kh, h + ph - i * sh)):
                        for fx in range(max(0, pw - j * sw), min(kw, w + pw - j * sw)):
                            acc += int(x[b, ch, i * sh - ph + fy, j * sw - pw + fx])
                            count += 1
                    q = (acc + count // 2) // count if acc > 0 else -((-acc + count // 2) // count)  # C truncation
                    out[b, ch, i, j] = min(127, max(-128, q))
    return out


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("zp", [-128, -5, 127])
def test_qavg_pool2d_is_bit_exact_and_averages_the_real_values(case, zp):
    rng = _rng("avg", case, zp)
    x = _i8(rng, 2, 3, 9, 11)
    attrs = {**POOL_CASES[case], "scale": _s(0.1), "zero_point": zp}
    want = _twin_pool(x, attrs)
    got = _same_for_every_thread_count("qavg_pool2d", attrs, [x], want)
    pt = POOL_CASES[case]
    real = F.avg_pool2d(torch.tensor(fp.dequantize(x, attrs["scale"], zp), dtype=torch.float64), pt["kernel"],
                        pt.get("stride"), pt.get("padding", [0, 0]), bool(pt.get("ceil_mode", 0)),
                        bool(pt.get("count_include_pad", 1)), pt.get("divisor_override") or None).numpy()
    assert got.shape == real.shape
    steps = np.abs(got - _ideal(real, attrs["scale"], zp))
    assert steps.max() <= 1  # only an exact half step can round the other way (ties away from zero, not to even)


def test_qavg_pool2d_is_tflite_average_pool_bit_for_bit():
    rng = _rng("tflite-avg")
    for kernel, stride, padding in (((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1)), ((2, 3), (1, 2), (1, 1))):
        x = _i8(rng, 1, 4, 7, 8)
        x[0, 0] = -128  # saturated inputs and the exact ties of a 2x2 window
        x[0, 1, ::2] = 127
        attrs = {"kernel": list(kernel), "stride": list(stride), "padding": list(padding), "count_include_pad": 0,
                 "scale": 0.05, "zero_point": 3}
        got = run("qavg_pool2d", attrs, [x], threads=2)
        np.testing.assert_array_equal(got, _tflite_average_pool(x, kernel, stride, padding))
    ties = np.array([1, 2, -1, -2, 0, -1, 3, 4], np.int8).reshape(1, 1, 1, 8)
    got = run("qavg_pool2d", {"kernel": [1, 2], "scale": 0.1, "zero_point": 0}, [ties])
    np.testing.assert_array_equal(got.ravel(), [2, -2, -1, 4])  # 1.5, -1.5, -0.5, 3.5: half away from zero


def test_qavg_pool2d_errors_name_the_problem():
    x = np.zeros((1, 2, 5, 5), np.int8)
    q = {"scale": 0.1, "zero_point": 0}
    with pytest.raises(Exception, match="should be at most half of the kernel size"):
        run("qavg_pool2d", {"kernel": [2, 2], "padding": [2, 2], **q}, [x])
    with pytest.raises(Exception, match="too small for kernel"):
        run("qavg_pool2d", {"kernel": [7, 7], **q}, [x])
    with pytest.raises(Exception, match="must have 4 dimensions"):
        run("qavg_pool2d", {"kernel": [2, 2], **q}, [x[0]])
    with pytest.raises(Exception, match="qavg_pool2d"):
        run("qavg_pool2d", {"kernel": [2, 2], **q}, [x.astype(np.float32)])
    with pytest.raises(Exception, match="scale must be a finite number > 0"):
        run("qavg_pool2d", {"kernel": [2, 2], "scale": 0.0, "zero_point": 0}, [x])


# --- qlut ------------------------------------------------------------------------------------------------------------

_PARAMS = {"hardtanh": {"min_val": -0.5, "max_val": 2.0}, "leaky_relu": {"alpha": 0.1}, "elu": {"alpha": 0.7},
           "softplus": {"beta": 2.0, "threshold": 3.0}}
_TORCH = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "hardtanh": lambda t: F.hardtanh(t, -0.5, 2.0), "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
    "elu": lambda t: F.elu(t, 0.7), "softplus": lambda t: F.softplus(t, 2.0, 3.0),
}


@pytest.mark.parametrize("function", QLUT_FUNCTIONS)
def test_qlut_reads_the_table_of_the_float_function(function):
    assert set(QLUT_FUNCTIONS) == set(fp.LUT_FUNCTIONS) == set(_TORCH)
    x_scale, x_zp, y_scale, y_zp = _s(0.047), -17, _s(0.0213), -60
    params = _PARAMS.get(function, {})
    table = fp.lut_table(function, x_scale, x_zp, y_scale, y_zp, **params)
    assert table.dtype == np.int8 and table.shape == (256,)
    # the table is PyTorch's function on the dequantized inputs, quantized (float64 here: identical but for ties)
    xr = torch.tensor(fp.dequantize(np.arange(-128, 128), x_scale, x_zp), dtype=torch.float64)
    ref = fp.quantize(_TORCH[function](xr).numpy().astype(np.float32), y_scale, y_zp)
    assert np.max(np.abs(table.astype(np.int64) - ref)) <= 1 and np.mean(table == ref) > 0.99
    # the kernel indexes it: every int8 input, any shape, every thread count
    rng = _rng("lut", function)
    x = np.concatenate([np.arange(-128, 128, dtype=np.int8), _i8(rng, 5000)]).reshape(2, -1)
    attrs = {"function": function, **params, "x_scale": x_scale, "x_zero_point": x_zp, "y_scale": y_scale,
             "y_zero_point": y_zp}
    got = _same_for_every_thread_count("qlut", attrs, [x, table], fp.qlut(x, table))
    np.testing.assert_array_equal(got[0, :256], table)


def test_lut_table_saturates_and_refuses_what_it_does_not_know():
    table = fp.lut_table("sigmoid", 0.2, 0, 1 / 256, -128)  # sigmoid in [0, 1): 1.0 itself saturates at 127
    assert table[0] == -128 and table[-1] == 127 and np.all(np.diff(table.astype(int)) >= 0)
    with pytest.raises(ValueError, match="no function 'swish'"):
        fp.lut_table("swish", 0.1, 0, 0.1, 0)
    with pytest.raises(ValueError, match="unknown qlut parameter"):
        fp.lut_table("elu", 0.1, 0, 0.1, 0, gamma=1.0)


def test_qlut_errors_name_the_problem():
    x = np.zeros((2, 3), np.int8)
    attrs = {"function": "tanh", "x_scale": 0.1, "x_zero_point": 0, "y_scale": 0.1, "y_zero_point": 0}
    with pytest.raises(Exception, match=r"table must have shape \[256\]"):
        run("qlut", attrs, [x, np.zeros(255, np.int8)])
    with pytest.raises(Exception, match="table"):
        run("qlut", attrs, [x, np.zeros(256, np.float32)])
    with pytest.raises(Exception, match="expected one of"):
        run("qlut", {**attrs, "function": "swish"}, [x, np.zeros(256, np.int8)])
    with pytest.raises(Exception, match="missing required attribute 'function'"):
        run("qlut", {k: v for k, v in attrs.items() if k != "function"}, [x, np.zeros(256, np.int8)])
    with pytest.raises(Exception, match="y_scale must be a finite number > 0"):
        run("qlut", {**attrs, "y_scale": 0.0}, [x, np.zeros(256, np.int8)])
    with pytest.raises(Exception, match="qlut"):
        run("qlut", attrs, [x.astype(np.float32), np.zeros(256, np.int8)])


def test_registered_in_the_portable_set():
    have = set(_C.registered_kernels())
    for op in ("qmul", "qmatmul", "qconcat", "qavg_pool2d", "qlut"):
        assert (op, "int8") in have
